package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/models"
)

// initRuns are init's work: a starter manifest, or (--example) a shipped example.
type initRuns struct{ starter, example runF[*commands.InitOptions] }

func newInitCmd(io iostreams.Streams, runs initRuns) *cobra.Command {
	runs.starter, runs.example = runs.starter.or(commands.Init), runs.example.or(commands.InitExample)
	opts := &commands.InitOptions{}
	cmd := &cobra.Command{
		Use:   "init [--dockerfile FILE | --image REF | --example NAME] [--name NAME]",
		Short: "Write a commented starter manifest, or one of the shipped examples",
		Long: `Write benchmark.yaml, a commented starter manifest, in the Dockerfile's folder (or --file).
It validates as written; edit the benchmark command and the commented fields you need. An
existing file is never overwritten.

The starter's command runs in the image it names: for a Dockerfile whose last stage is FROM
scratch (no shell), the program the Dockerfile copies in, else a shell one-liner. With
--image REF the manifest uses that prebuilt image (image.ref) and needs no Dockerfile; its
command is a shell one-liner (sh -c), so the image must have sh.

--example NAME writes one of the examples benchctl ships (allreduce, cpubench, dummy) into
a new folder (--dir, default ./NAME): its Dockerfile, manifest and Go sources, for when
benchctl was installed without a checkout. Build its binary with Go, as the command prints.
--example list lists them.`,
		Example: `  benchctl init --dockerfile docker/train.Dockerfile --name llama-train
  benchctl init                      # uses ./Dockerfile
  benchctl init --image rocm/pytorch:6.4 --name smoke
  benchctl init --example allreduce  # writes ./allreduce/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Example != "" {
				if cmd.Flags().Changed("dockerfile") || opts.Image != "" || opts.Output != "" || opts.Name != "" {
					return usagef("use --example NAME [--dir DIR] alone", "--example writes a shipped example as it is; it takes no --dockerfile, --image, --name or --file")
				}
				return runs.example(cmd.Context(), io, opts)
			}
			if opts.Dir != "" {
				return usagef("use --file PATH for a starter manifest", "--dir is where --example writes")
			}
			if opts.Image != "" && cmd.Flags().Changed("dockerfile") {
				return usagef("give one of them", "--image and --dockerfile both name the image")
			}
			return runs.starter(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dockerfile, "dockerfile", "Dockerfile", "the Dockerfile the benchmark image is built from")
	cmd.Flags().StringVar(&opts.Image, "image", "", "a prebuilt image's reference (image.ref) instead of a Dockerfile")
	cmd.Flags().StringVar(&opts.Example, "example", "", "write a shipped example into a new folder (list: name them)")
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "the new folder --example writes (default: ./NAME)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "manifest name (default: from the Dockerfile's folder)")
	cmd.Flags().StringVar(&opts.Output, "file", "", "where to write the manifest (default: benchmark.yaml beside the Dockerfile)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "old spelling of --file")
	deprecate(cmd, "output", func(v string) string { return "--file " + v })
	_ = cmd.MarkFlagFilename("file", "yaml", "yml")
	_ = cmd.MarkFlagFilename("dockerfile")
	_ = cmd.MarkFlagDirname("dir")
	_ = cmd.RegisterFlagCompletionFunc("example", completeWords(append(models.Examples(), "list")...))
	return cmd
}

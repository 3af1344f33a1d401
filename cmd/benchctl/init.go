package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

type initOptions struct {
	dockerfile string
	image      string // a prebuilt image instead of a Dockerfile
	example    string // write a shipped example instead of a starter
	dir        string // where --example writes
	name       string
	output     string
}

func newInitCmd(io iostreams.Streams) *cobra.Command {
	opts := &initOptions{}
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
			if opts.example != "" {
				if cmd.Flags().Changed("dockerfile") || opts.image != "" || opts.output != "" || opts.name != "" {
					return usagef("use --example NAME [--dir DIR] alone", "--example writes a shipped example as it is; it takes no --dockerfile, --image, --name or --file")
				}
				return initExampleRun(io, opts)
			}
			if opts.dir != "" {
				return usagef("use --file PATH for a starter manifest", "--dir is where --example writes")
			}
			if opts.image != "" && cmd.Flags().Changed("dockerfile") {
				return usagef("give one of them", "--image and --dockerfile both name the image")
			}
			return initRun(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.dockerfile, "dockerfile", "Dockerfile", "the Dockerfile the benchmark image is built from")
	cmd.Flags().StringVar(&opts.image, "image", "", "a prebuilt image's reference (image.ref) instead of a Dockerfile")
	cmd.Flags().StringVar(&opts.example, "example", "", "write a shipped example into a new folder (list: name them)")
	cmd.Flags().StringVar(&opts.dir, "dir", "", "the new folder --example writes (default: ./NAME)")
	cmd.Flags().StringVar(&opts.name, "name", "", "manifest name (default: from the Dockerfile's folder)")
	cmd.Flags().StringVar(&opts.output, "file", "", "where to write the manifest (default: benchmark.yaml beside the Dockerfile)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "old spelling of --file")
	deprecate(cmd, "output", func(v string) string { return "--file " + v })
	_ = cmd.MarkFlagFilename("file", "yaml", "yml")
	_ = cmd.MarkFlagFilename("dockerfile")
	_ = cmd.MarkFlagDirname("dir")
	_ = cmd.RegisterFlagCompletionFunc("example", completeWords(append(models.Examples(), "list")...))
	return cmd
}

func initRun(ctx context.Context, io iostreams.Streams, opts *initOptions) error {
	if opts.image != "" {
		return writeStarter(io, opts, "", manifest.StarterOptions{Image: opts.image}, refName(opts.image))
	}
	df, err := filepath.Abs(opts.dockerfile)
	if err != nil {
		return err
	}
	if st, err := os.Stat(df); err != nil || st.IsDir() {
		return usagef("point --dockerfile at your Dockerfile, or use a prebuilt image with --image REF", "no Dockerfile at %s", df)
	}
	so := manifest.StarterOptions{}
	data, err := safefile.ReadFile(df, 16<<20)
	if err != nil {
		return usagef("point --dockerfile at a readable Dockerfile", "reading %s: %v", df, err)
	}
	if base, prog := image.FinalStage(data); strings.EqualFold(base, "scratch") {
		// No shell in the image: the command is the program the Dockerfile copies in.
		so.Command, so.CommandNote = []string{"/benchmark"}, "FROM scratch has no shell: the program itself; use the path your Dockerfile copies it to"
		if prog != "" {
			so.Command, so.CommandNote = []string{prog}, "the program the Dockerfile copies (FROM scratch has no shell); add its arguments"
		}
	}
	return writeStarter(io, opts, df, so, filepath.Base(filepath.Dir(df)))
}

// writeStarter writes the starter manifest: beside the Dockerfile df (or in the current
// folder without one) unless --file says where.
func writeStarter(io iostreams.Streams, opts *initOptions, df string, so manifest.StarterOptions, suggest string) error {
	out := opts.output
	switch {
	case out == "" && df != "":
		out = filepath.Join(filepath.Dir(df), "benchmark.yaml")
	case out == "":
		out = "benchmark.yaml"
	}
	out, _ = filepath.Abs(out)
	if ext := strings.ToLower(filepath.Ext(out)); ext != ".yaml" && ext != ".yml" {
		return usagef("name it benchmark.yaml (or .yml)", "--file %s: the starter manifest is YAML (with comments); give a .yaml or .yml path", out)
	}
	if st, err := os.Stat(filepath.Dir(out)); err != nil || !st.IsDir() {
		return usagef("create the folder first, or pick another --file", "--file %s: the folder %s does not exist", out, filepath.Dir(out))
	}
	if df != "" {
		rel, err := filepath.Rel(filepath.Dir(out), df)
		if err != nil {
			return err
		}
		so.Dockerfile = filepath.ToSlash(rel)
	}
	so.Name, so.Schema = opts.name, "./"+schemaFileName
	if so.Name == "" {
		so.Name = manifest.SuggestName(suggest)
	}
	text, err := manifest.Starter(so)
	if err != nil {
		return usagef("choose another --name", "%v", err)
	}
	if so.Image != "" { // the one value not checked yet: the starter must validate as written
		if _, _, err := manifest.Parse(out, out, []byte(text), manifest.Options{}); err != nil {
			return usagef("give an image reference such as rocm/pytorch:6.4", "--image %q is not a valid image reference: %v", so.Image, err)
		}
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return usagef("remove it first or pick another path with --file", "%s already exists; benchctl init never overwrites", out)
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(io.Out(), out)
	if infoShown() {
		fmt.Fprintf(io.ErrOut(), "wrote %s; check it with: benchctl validate --manifest %s\n", out, out)
	}
	if p, err := writeSchemaBeside(out); err != nil {
		if slog.Default().Enabled(context.Background(), slog.LevelWarn) {
			fmt.Fprintf(io.ErrOut(), "warning: %v; for editor support, run: benchctl schema > %s\n", err, p)
		}
	} else if infoShown() {
		fmt.Fprintf(io.ErrOut(), "wrote %s, the manifest's JSON Schema: editors read it to complete and check the manifest\n", p)
	}
	return nil
}

// refName is the name an image reference suggests: its last path part, without tag or digest
// (rocm/pytorch:6.4 -> pytorch).
func refName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	ref = ref[strings.LastIndex(ref, "/")+1:]
	ref, _, _ = strings.Cut(ref, ":")
	return ref
}

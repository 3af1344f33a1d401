package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

func newVersionCmd(io iostreams.Streams, run runF[*commands.VersionOptions]) *cobra.Command {
	run = run.or(commands.Version)
	opts := &commands.VersionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show benchctl's version and the Docker Engine it talks to",
		Long: `Show benchctl's version, commit and Go version, and identify the Docker Engine that
DOCKER_HOST points at (its ID, version and API version). An unreachable engine is reported,
not an error: 'version' always exits 0. --no-engine skips the engine.`,
		Example: `  benchctl version
  benchctl version -o json
  srun -N 3 benchctl version -o json   # one line per node: which engine each node uses`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), io, opts)
		},
	}
	outputFlag(cmd, &opts.Output, "table", "json")
	cmd.Flags().BoolVar(&opts.NoEngine, "no-engine", false, "do not contact the Docker Engine")
	return cmd
}

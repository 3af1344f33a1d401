package main

import (
	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"

	"github.com/spf13/cobra"
)

func newValidateCmd(io iostreams.Streams, run runF[*commands.ValidateOptions]) *cobra.Command {
	run = run.or(commands.Validate)
	opts := &commands.ValidateOptions{}
	cmd := &cobra.Command{
		Use:   "validate --manifest FILE",
		Short: "Check a manifest and print a report of it resolved",
		Long: `Check a manifest (JSON or YAML) strictly: unknown fields, wrong types, bad values, missing
files, unset ${VAR} references, conflicting mounts. Every problem is reported at once as
FILE:LINE: FIELD: what is wrong (what is allowed), and the exit code is 4.

A valid manifest is printed resolved (absolute paths, ${VAR} expanded, defaults filled,
imported catalog models included, and the file's path and digest) with secret values shown
as ***: as YAML (the default) or, with -o json, as JSON. What is printed is a report of what
benchctl will use, not a manifest to feed back: it has fields a manifest does not (path,
digest) and writes env as a list; the YAML starts with a comment that says so.`,
		Example: `  benchctl validate --manifest models/cpubench/benchmark.yaml
  benchctl validate --manifest m.json -o json`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Manifest == "" {
				return usagef("give the manifest to check: benchctl validate --manifest m.yaml", "--manifest is required")
			}
			return run(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Manifest, "manifest", "m", "", "manifest file (.yaml, .yml or .json)")
	outputFlag(cmd, &opts.Output, "yaml", "json")
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	return cmd
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// referenceRuns are the reference subcommands' work: set, show and clear.
type referenceRuns struct {
	set, show, clear runF[*commands.ReferenceOptions]
}

func newReferenceCmd(io iostreams.Streams, runs referenceRuns) *cobra.Command {
	runs.set, runs.show, runs.clear = runs.set.or(commands.ReferenceSet), runs.show.or(commands.ReferenceShow), runs.clear.or(commands.ReferenceClear)
	opts := &commands.ReferenceOptions{}
	cmd := &cobra.Command{
		Use:   "reference set|show|clear JOB|MANIFEST",
		Short: "Mark a job as the reference its manifest's later jobs are judged against",
		Long: `A manifest's reference job is what 'benchctl compare JOB' (one job) and 'collect --check'
compare a later job of the same manifest (by its name) against. It is recorded in the shared
directory (jobs/.references/<manifest>.json: the job's id and attempt; the job folder stays the
truth).

  set JOB          the job (its newest attempt) becomes the reference of its manifest
  show JOB|NAME    the reference of the job's manifest, or of the manifest of that name
  clear JOB|NAME   no reference any more

Exit codes: 0 done, 4 no such job or manifest name.`,
		Example: `  benchctl reference set 123456
  benchctl reference show allreduce
  benchctl compare 123789          # against the reference`,
	}
	set := &cobra.Command{
		Use:   "set JOB",
		Short: "Make the job the reference of its manifest",
		Long: `The job (its newest attempt) becomes the reference of its manifest (job.json's manifest
name): compare JOB and collect --check judge the manifest's later jobs against it. It replaces the
reference before, atomically.`,
		Example: "  benchctl reference set 123456",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Target = args[0]
			return runs.set(cmd.Context(), io, opts)
		},
		ValidArgsFunction: completeJobIDs(&opts.SharedDir),
	}
	show := &cobra.Command{
		Use:   "show JOB|MANIFEST",
		Short: "Print a manifest's reference job",
		Long: `Print the reference job of a manifest: of the job's manifest when the argument is a job of
the shared directory, else of the manifest of that name. -o json prints the record (null: none).`,
		Example: "  benchctl reference show allreduce\n  benchctl reference show 123456 -o json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Target = args[0]
			return runs.show(cmd.Context(), io, opts)
		},
	}
	clear := &cobra.Command{
		Use:   "clear JOB|MANIFEST",
		Short: "Remove a manifest's reference",
		Long: `Remove the reference of a manifest (of the job's manifest when the argument is a job); none
is not an error.`,
		Example: "  benchctl reference clear allreduce",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Target = args[0]
			return runs.clear(cmd.Context(), io, opts)
		},
	}
	for _, c := range []*cobra.Command{set, show, clear} {
		c.Flags().StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
		_ = c.MarkFlagDirname("shared-dir")
		cmd.AddCommand(c)
	}
	outputFlag(show, &opts.Output, "table", "json")
	return cmd
}

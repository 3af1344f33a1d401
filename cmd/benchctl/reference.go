package main

import (
	"context"
	"fmt"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
)

type referenceOptions struct {
	sharedDir string
	output    string
}

func newReferenceCmd(io iostreams.Streams) *cobra.Command {
	opts := &referenceOptions{}
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
			return referenceSet(cmd.Context(), io, opts, args[0])
		},
		ValidArgsFunction: completeJobIDs(&opts.sharedDir),
	}
	show := &cobra.Command{
		Use:   "show JOB|MANIFEST",
		Short: "Print a manifest's reference job",
		Long: `Print the reference job of a manifest: of the job's manifest when the argument is a job of
the shared directory, else of the manifest of that name. -o json prints the record (null: none).`,
		Example: "  benchctl reference show allreduce\n  benchctl reference show 123456 -o json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return referenceShow(cmd.Context(), io, opts, args[0])
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
			return referenceClear(cmd.Context(), io, opts, args[0])
		},
	}
	for _, c := range []*cobra.Command{set, show, clear} {
		c.Flags().StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
		_ = c.MarkFlagDirname("shared-dir")
		cmd.AddCommand(c)
	}
	outputFlag(show, &opts.output, "table", "json")
	return cmd
}

// manifestOf is the manifest name arg stands for: the name of a job's manifest when arg is a
// job of the shared directory, else arg itself.
func manifestOf(l jobdir.Layout, arg string) (string, error) {
	if d, err := l.Find(arg, -1); err == nil {
		j, err := jobdir.ReadJob(d.JobFile())
		if err != nil {
			return "", fmt.Errorf("reading job %s: %w", arg, err)
		}
		return j.Manifest.Name, nil
	}
	return arg, nil
}

func referenceSet(_ context.Context, io iostreams.Streams, opts *referenceOptions, job string) error {
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	l := jobdir.Layout{Shared: dir}
	d, err := l.Find(job, -1)
	if err != nil {
		return err
	}
	j, err := jobdir.ReadJob(d.JobFile())
	if err != nil {
		return usagef("collect or run the job first", "reading job %s: %v", job, err)
	}
	if j.Manifest.Name == "" {
		return usagef("pick a job benchctl ran", "job %s: job.json names no manifest", job)
	}
	r := jobdir.Reference{Manifest: j.Manifest.Name, Job: d.JobID, Attempt: d.Attempt, SetAt: time.Now().UTC()}
	if u, err := user.Current(); err == nil {
		r.SetBy = u.Username
	}
	if err := l.SetReference(r); err != nil {
		return err
	}
	fmt.Fprintf(io.Out(), "the reference of %s is job %s (attempt %d)\n", r.Manifest, r.Job, r.Attempt)
	return nil
}

// referenceOf is the shared directory's layout and the manifest name arg stands for (a
// job's manifest, or a name).
func referenceOf(opts *referenceOptions, arg string) (jobdir.Layout, string, error) {
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return jobdir.Layout{}, "", err
	}
	l := jobdir.Layout{Shared: dir}
	name, err := manifestOf(l, arg)
	return l, name, err
}

func referenceShow(_ context.Context, io iostreams.Streams, opts *referenceOptions, arg string) error {
	l, name, err := referenceOf(opts, arg)
	if err != nil {
		return err
	}
	r, err := l.ReadReference(name)
	if err != nil {
		return err
	}
	if opts.output == "json" {
		return writeJSON(io.Out(), r)
	}
	if r == nil {
		fmt.Fprintf(io.Out(), "%s has no reference job (benchctl reference set JOB)\n", name)
		return nil
	}
	by := ""
	if r.SetBy != "" {
		by = " by " + r.SetBy
	}
	fmt.Fprintf(io.Out(), "the reference of %s is job %s (attempt %d), set %s%s\n", r.Manifest, r.Job, r.Attempt, r.SetAt.Format(time.RFC3339), by)
	return nil
}

func referenceClear(_ context.Context, io iostreams.Streams, opts *referenceOptions, arg string) error {
	l, name, err := referenceOf(opts, arg)
	if err != nil {
		return err
	}
	if err := l.ClearReference(name); err != nil {
		return err
	}
	fmt.Fprintf(io.Out(), "%s has no reference job now\n", name)
	return nil
}

package commands

import (
	"context"
	"fmt"
	"os/user"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
)

// ReferenceOptions are the reference subcommands' flags and argument.
type ReferenceOptions struct {
	SharedDir string
	Output    string
	Target    string // set: the job; show and clear: a job, or a manifest's name
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

// ReferenceSet makes a job the reference of its manifest.
func ReferenceSet(_ context.Context, io iostreams.Streams, opts *ReferenceOptions) error {
	job := opts.Target
	dir, err := SharedDir(opts.SharedDir)
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
		return exitcode.Usagef("collect or run the job first", "reading job %s: %v", job, err)
	}
	if j.Manifest.Name == "" {
		return exitcode.Usagef("pick a job benchctl ran", "job %s: job.json names no manifest", job)
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
func referenceOf(opts *ReferenceOptions, arg string) (jobdir.Layout, string, error) {
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return jobdir.Layout{}, "", err
	}
	l := jobdir.Layout{Shared: dir}
	name, err := manifestOf(l, arg)
	return l, name, err
}

// ReferenceShow prints a manifest's reference job.
func ReferenceShow(_ context.Context, io iostreams.Streams, opts *ReferenceOptions) error {
	arg := opts.Target
	l, name, err := referenceOf(opts, arg)
	if err != nil {
		return err
	}
	r, err := l.ReadReference(name)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
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

// ReferenceClear removes a manifest's reference.
func ReferenceClear(_ context.Context, io iostreams.Streams, opts *ReferenceOptions) error {
	arg := opts.Target
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

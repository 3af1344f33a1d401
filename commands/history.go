package commands

import (
	"context"
	"fmt"
	goio "io"
	"log/slog"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/collect"
	"github.com/benchctl/benchctl/results/compare"
)

// HistoryOptions are benchctl history's flags and job.
type HistoryOptions struct {
	Job       string // the job, or a manifest's name, whose history is shown
	SharedDir string
	Output    string
	Threshold string
	Opts      compare.HistoryOptions
}

// History lists the rows of the collected jobs, oldest first, with their verdicts.
func History(_ context.Context, io iostreams.Streams, opts *HistoryOptions) error {
	job := opts.Job
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	l := jobdir.Layout{Shared: dir}
	if job != "" {
		d, err := l.Find(job, -1)
		if err != nil {
			return err
		}
		j, err := jobdir.ReadJob(d.JobFile())
		if err != nil {
			return fmt.Errorf("reading job %s: %w", job, err)
		}
		if opts.Opts.Manifest != "" && opts.Opts.Manifest != j.Manifest.Name {
			return exitcode.Usagef("give the job or --name, not both", "job %s is of manifest %s, not %s", job, j.Manifest.Name, opts.Opts.Manifest)
		}
		opts.Opts.Manifest = j.Manifest.Name
	}
	started := time.Now()
	rows, err := compare.History(l, opts.Opts)
	if err != nil {
		return err
	}
	slog.Debug("history", "rows", len(rows), "seconds", time.Since(started).Seconds())
	return writeShown(io, opts.Output, func(w goio.Writer) error { return collect.ExportHistory(w, opts.Output, rows) })
}

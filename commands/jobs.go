package commands

import (
	"context"
	"fmt"
	goio "io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
)

// JobsOptions are benchctl jobs' flags.
type JobsOptions struct {
	SharedDir string
	Limit     int
	Output    string
	NoSlurm   bool
	Cluster   kubernetes.Cluster // the cluster asked about Kubernetes jobs
}

// Jobs lists the jobs of the shared directory with their states.
func Jobs(ctx context.Context, io iostreams.Streams, opts *JobsOptions) error {
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	var sched jobdir.Scheduler
	if !opts.NoSlurm {
		sched = scheduler.Any(schedulersOn(opts.Cluster)...) // the one that knows each job says how it stands
	}
	jobs, err := jobdir.Layout{Shared: dir}.Overview(ctx, opts.Limit, sched, time.Now())
	if err != nil {
		return fmt.Errorf("listing the jobs of %s: %w", dir, err)
	}
	if opts.Output == "json" {
		return writeShown(io, "json", func(w goio.Writer) error { return writeJSON(w, jobs) })
	}
	if len(jobs) == 0 {
		if infoShown() {
			fmt.Fprintf(io.ErrOut(), "no jobs in %s\n", jobdir.Layout{Shared: dir}.Jobs())
		}
		return nil
	}
	return colouredTable(io, "STATE", func(w goio.Writer) error { return writeJobsTable(w, jobs) })(io.Out())
}

// writeJobsTable is jobs' table.
func writeJobsTable(w goio.Writer, jobs []jobdir.JobOverview) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tNAME\tSTATE\tNODES\tSTARTED\tDURATION\tCOLLECTED\tOUTCOME")
	for _, j := range jobs {
		id := textsafe.Line(j.ID) // names and outcomes come from files any co-writer could write
		if j.Attempt > 0 {
			id += fmt.Sprintf(" (attempt %d)", j.Attempt)
		}
		started, took := "-", "-"
		if j.Started != nil {
			started = j.Started.Local().Format("2006-01-02 15:04")
			took = humanDuration(j.Seconds)
		}
		collected := "no"
		if j.Collected {
			collected = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", id, orDash(textsafe.Line(j.Name)), j.State, j.Nodes, started, took, collected, oneLine(j.Outcome, 100))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine is s on one line, cut to n characters, its control characters escaped.
func oneLine(s string, n int) string {
	s = textsafe.Line(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// humanDuration is seconds as 0.4s, 12s, 3m5s or 2h0m0s.
func humanDuration(secs float64) string {
	d := time.Duration(secs * float64(time.Second))
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

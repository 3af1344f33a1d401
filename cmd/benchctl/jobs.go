package main

import (
	"context"
	"fmt"
	goio "io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

type jobsOptions struct {
	sharedDir string
	limit     int
	output    string
	noSlurm   bool
}

func newJobsCmd(io iostreams.Streams) *cobra.Command {
	opts := &jobsOptions{}
	cmd := &cobra.Command{
		Use:   "jobs [--shared-dir D] [--limit N] [-o FORMAT]",
		Short: "List the jobs in the shared directory, newest first, with their state",
		Long: `List the jobs of the shared directory (jobs/<id>, the newest attempt of a requeued job),
newest first: state, nodes, start, duration and outcome, judged from job.json and the nodes'
status files, and from Slurm (squeue, scontrol, sacct) for a job whose nodes have not all
finished, when Slurm is there.

States: running (a node is at work), done (every node succeeded), failed (a node failed, or
never reported, in a job that has ended), lost (a node still says running but Slurm says the
job ended: it was killed or its node died), pending (no node has reported yet). COLLECTED
says whether benchctl collect has written the job's perf.csv.`,
		Example: `  benchctl jobs
  benchctl jobs --shared-dir /shared/benchctl --limit 50
  benchctl jobs -o json | jq -r '.[] | select(.state == "failed") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.limit < 0 {
				return usagef("give the number of jobs to list, or 0 for all", "invalid --limit %d", opts.limit)
			}
			return jobsRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	f.IntVar(&opts.limit, "limit", 20, "list at most this many jobs, the newest (0: all)")
	f.BoolVar(&opts.noSlurm, "no-slurm", false, "do not ask the scheduler (Slurm): judge unfinished jobs by their files alone")
	outputFlag(cmd, &opts.output, "table", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

func jobsRun(ctx context.Context, io iostreams.Streams, opts *jobsOptions) error {
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	var sched jobdir.Scheduler
	if !opts.noSlurm {
		sched = scheduler.Any(schedulers()...) // the one that knows each job says how it stands
	}
	jobs, err := jobdir.Layout{Shared: dir}.Overview(ctx, opts.limit, sched, time.Now())
	if err != nil {
		return fmt.Errorf("listing the jobs of %s: %w", dir, err)
	}
	if opts.output == "json" {
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

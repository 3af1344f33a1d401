package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goio "io"
	"log/slog"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/archive"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/collect"
	"github.com/benchctl/benchctl/results/compare"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// CollectOptions are benchctl collect's flags and job.
type CollectOptions struct {
	Job       string // the job to collect (--latest: the newest of the shared directory)
	SharedDir string
	Attempt   int
	Partial   bool
	Output    string // the stdout format
	AppendTo  string // --append: a perf.csv of the user's to append the rows to
	OldAppend string // -o PATH, the old spelling of --append
	Baseline  string
	Latest    bool
	NoSlurm   bool               // --no-slurm: the job folder alone decides
	Cluster   kubernetes.Cluster // the cluster asked about a Kubernetes job
	Check     bool               // --check: judge the job against --against, exit 3 on a regression
	Against   string             // reference, last, best or a job id
	Junit     string             // --junit FILE
	Threshold string
	// set in RunE: --threshold parsed (before anything is collected)
	ThresholdPct float64
}

// Collect aggregates a job's node folders into perf.csv, summary.json and report.html,
// prints the table, and with --check judges the job against its reference.
func Collect(ctx context.Context, io iostreams.Streams, opts *CollectOptions) error {
	jobID := opts.Job
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	if err := fetchFromCluster(ctx, jobdir.Layout{Shared: dir}, jobID, opts.Cluster); err != nil {
		return err
	}
	started, lastLog := time.Now(), time.Now()
	col, err := collect.Collect(ctx, collect.CollectOptions{
		SharedDir: dir, JobID: jobID, Attempt: opts.Attempt, Partial: opts.Partial, AppendTo: opts.AppendTo, Baseline: opts.Baseline,
		Scheduler: newCollectScheduler(opts.NoSlurm, opts.Cluster),
		Aggregate: results.AggregateOptions{CollectedBy: CurrentBuild().Version, Progress: func(n int) {
			if now := time.Now(); now.Sub(lastLog) >= 5*time.Second {
				lastLog = now
				slog.Info("collecting", "job", jobID, "nodes read", n)
			}
		}},
	})
	if col != nil {
		for _, w := range col.Warnings {
			slog.Warn(w)
		}
	}
	if err != nil {
		return err
	}
	s := col.Summary
	const shownProblems = 10
	for i, p := range s.Problems {
		if i == shownProblems {
			slog.Warn("more problems in summary.json", "count", len(s.Problems)-shownProblems)
			break
		}
		slog.Warn("problem in the job folder", "detail", p)
	}
	slog.Info("collected", "job", s.Job, "attempt", s.Attempt, "nodes", s.Nodes.Expected, "failed", s.Nodes.Failed,
		"running", s.Nodes.Running, "status", s.Status, "dir", col.Dir.Path, "seconds", time.Since(started).Round(time.Millisecond).Seconds())
	if opts.AppendTo != "" {
		slog.Info("appended", "file", opts.AppendTo, "rows", len(col.Perf.Rows))
	}
	write := func(w goio.Writer) error { return collect.ExportCollect(w, opts.Output, s, col.Perf) }
	if opts.Output == results.FormatTable {
		write = colouredTable(io, "STATUS", write)
	}
	if err := writeShown(io, opts.Output, write); err != nil {
		return err
	}
	if !opts.Partial { // --partial only looks
		removeSubmittedWhenEnded(jobdir.Layout{Shared: dir}, col.Dir.JobID, col.Scheduler)
	}
	checkErr, err := collectCheck(jobdir.Layout{Shared: dir}, col, opts)
	if err != nil {
		return err
	}
	if err := s.Err(); err != nil {
		return err
	}
	return checkErr
}

// fetchFromCluster brings a Kubernetes job's folders into l through the cluster's API
// when l does not have them (this machine does not mount the results volume); a job of
// another scheduler, or one l has, is left to collect.
func fetchFromCluster(ctx context.Context, l jobdir.Layout, id string, cluster kubernetes.Cluster) error {
	if !kubernetes.IsID(id) {
		return nil
	}
	if have, err := archive.Folders(l, id); err != nil || len(have) > 0 {
		return nil // collect says what is wrong with the folder
	}
	slog.Info("the job's folders are not in the shared directory: fetching them through the cluster's API (a collector pod on the results volume)", "job", id, "into", l.Jobs())
	start := time.Now()
	files, err := kubernetes.Scheduler{Cluster: &cluster}.Fetch(ctx, id, l)
	if err != nil {
		return err
	}
	slog.Info("fetched", "job", id, "files", files, "seconds", time.Since(start).Round(time.Millisecond).Seconds())
	return nil
}

// collectCheck judges the collected job against --against and writes --junit. The first
// error is the check's verdict (a regression, exit 3), the second what kept it from being made.
func collectCheck(l jobdir.Layout, col *collect.Collection, opts *CollectOptions) (verdict, err error) {
	var cmp *compare.Comparison
	against := ""
	if opts.Check {
		cmp, against, err = compare.Check(l, col.Dir, opts.Against, compare.CompareOptions{Threshold: opts.ThresholdPct})
		var ae *compare.AgainstError
		switch {
		case errors.As(err, &ae):
			slog.Warn("nothing to check against: "+ae.Msg, "job", col.Dir.JobID)
		case err != nil:
			return nil, err
		default:
			n := cmp.Counts()
			slog.Info("checked", "against", against, "regressed", n[compare.VerdictRegressed], "improved", n[compare.VerdictImproved],
				"no change", n[compare.VerdictSame], "inconclusive", n[compare.VerdictInconclusive], "not in both", n[compare.VerdictOnlyBase]+n[compare.VerdictOnlyNew])
		}
	}
	if opts.Junit != "" {
		var buf bytes.Buffer
		if err := compare.WriteJUnit(&buf, col.Summary, col.Perf, cmp, against); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(opts.Junit, buf.Bytes()); err != nil {
			return nil, fmt.Errorf("writing --junit %s: %w", opts.Junit, err)
		}
		slog.Info("wrote JUnit XML", "file", opts.Junit)
	}
	if cmp == nil {
		return nil, nil
	}
	return cmp.Err(), nil
}

// writeShown writes a command's -o output to stdout. JSON has the C1 and bidi controls a
// container may have written as \u escapes (the same strings to a JSON reader); a CSV
// shown on a terminal has its control characters escaped (textsafe.Text), while a CSV on
// a pipe or in a file stays data, byte-exact. table and markdown escape their cells
// themselves.
func writeShown(io iostreams.Streams, format string, write func(goio.Writer) error) error {
	if format != results.FormatJSON && (format != results.FormatCSV || !io.IsStdoutTTY()) {
		return write(io.Out())
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	data := textsafe.JSON(buf.Bytes())
	if format == results.FormatCSV {
		data = []byte(textsafe.Text(buf.String()))
	}
	_, err := io.Out().Write(data)
	return err
}

// accountingNote says what a job that Slurm has forgotten, and its accounting cannot tell
// about, means for collect: "Slurm accounting is off: cannot tell whether job 12 ended; ...".
func accountingNote(st slurm.JobState, jobID string) string {
	return fmt.Sprintf("%s: cannot tell whether job %s ended; nodes still saying running are reported as running", st.Accounting, jobID)
}

// LatestJob is the job of the shared directory that started last.
func LatestJob(flag string) (string, error) {
	dir, err := SharedDir(flag)
	if err != nil {
		return "", err
	}
	l := jobdir.Layout{Shared: dir}
	id, err := l.Newest()
	if err != nil {
		return "", fmt.Errorf("listing the jobs of %s: %w", dir, err)
	}
	if id == "" {
		return "", exitcode.Usagef("run a job first, or give --shared-dir (default $BENCHCTL_SHARED_DIR)", "--latest: there are no jobs in %s", l.Jobs())
	}
	slog.Info("collecting the newest job", "job", id)
	return id, nil
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goio "io"
	"log/slog"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/scheduler/slurm"
	"github.com/spf13/cobra"
)

type collectOptions struct {
	sharedDir string
	attempt   int
	partial   bool
	output    string // the stdout format
	appendTo  string // --append: a perf.csv of the user's to append the rows to
	oldAppend string // -o PATH, the old spelling of --append
	baseline  string
	latest    bool
	noSlurm   bool   // --no-slurm: the job folder alone decides
	check     bool   // --check: judge the job against --against, exit 3 on a regression
	against   string // reference, last, best or a job id
	junit     string // --junit FILE
	threshold string
	// set in RunE: --threshold parsed (before anything is collected)
	thresholdPct float64
}

func newCollectCmd(io iostreams.Streams) *cobra.Command {
	opts := &collectOptions{}
	cmd := &cobra.Command{
		Use:               "collect (JOBID | --latest) [--shared-dir D] [--attempt N] [--partial] [--append FILE] [-o FORMAT]",
		ValidArgsFunction: completeJobIDs(&opts.sharedDir),
		Short:             "Aggregate a job's per-node results into perf.csv, summary.json and report.html",
		Long: `Read every node folder of a job (jobs/<jobid> in the shared directory, the newest attempt
of a requeued job unless --attempt says which) and write perf.csv (madengine's columns, then
benchctl's: winner, min, max, mean, median, stdev, cv, failed nodes), summary.json and a
self-contained report.html into the job folder, each atomically. The table is printed on
stdout.

Per benchmark the best CSV wins: the node with the most rows that have a performance value
(then the most rows, then the lowest rank). Values that several nodes report for the same
row are aggregated, never summed. A benchmark is SUCCESS only when it has a result, no
node failed and every node finished; a node that never reported counts as failed, and a
node whose status still says running in a job that Slurm says has ended was lost
("lost (last status T, what it recorded last)").

A job that is still running is refused unless --partial: Slurm is asked (squeue, then
scontrol, then sacct for a job that slurmctld has forgotten) when it is there, else the
status files decide; collect says so when Slurm accounting is off. When Slurm does not
answer (a login node cut off from slurmctld), one warning says so and the job folder decides;
--no-slurm asks nothing. With --partial, nodes
still running are shown as running, never as SUCCESS: a benchmark they still run, and the
job, are FAILURE ("partial: 1 of 4 nodes still running"). --append adds the rows to your own
perf.csv under a lock (header union, atomic rewrite). --baseline compares with an earlier
perf.csv: relative_change is the change of each row's performance against the row with the
same model, metric and key columns there, in percent.

--check then judges the job against --against (its manifest's reference job, the default; last
or best, the last or best earlier collected job of the same manifest; or a job id) as compare
does (per-metric rules of the manifest, the rank test over trials) and exits 3 when a row
regressed; with no reference it warns that nothing was checked. --junit FILE writes JUnit XML
(one test case per perf.csv row: a benchmark, variant and metric; a failed or regressed row
fails with the verdict and the numbers) for CI test reporters; see docs/ci.md.

Exit codes: 0 all benchmarks succeeded (and, with --check, nothing regressed), 1 the job is
still running (without --partial) or the folders could not be read, 3 a benchmark or node
failed (with --partial: or nodes are still running), or --check found a regression, 4 no such
job or bad flags.

-o prints the table (the default), csv (perf.csv itself), json (summary.json) or markdown.
The old spellings --format FORMAT and -o FILE (for --append FILE) still work, with a
warning, until the next release.`,
		Example: `  benchctl collect 123456
  benchctl collect --latest
  benchctl collect 123456 --attempt 0 -o markdown
  benchctl collect 123456 --partial --append ~/perf.csv
  benchctl collect 123457 --baseline ~/perf-last-week.csv
  benchctl collect 123458 --check --junit results.xml          # a CI gate against the reference
  BENCHCTL_SHARED_DIR=/shared/benchctl benchctl collect 123456 -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.latest && len(args) == 1:
				return usagef("give the job id, or --latest for the newest job, not both", "--latest and the job %s are both given", args[0])
			case !opts.latest && len(args) == 0:
				return usagef("benchctl collect JOBID (benchctl jobs lists them), or benchctl collect --latest", "no job given")
			}
			if opts.oldAppend != "" {
				if opts.appendTo != "" && opts.appendTo != opts.oldAppend {
					return usagef("give the file once: --append FILE", "--append %s and -o %s both name a file to append to", opts.appendTo, opts.oldAppend)
				}
				opts.appendTo = opts.oldAppend
			}
			thr, err := results.ParseThreshold(opts.threshold)
			if err != nil {
				return usagef("give a percentage, e.g. --threshold 5%", "invalid --threshold: %v", err)
			}
			opts.thresholdPct = thr
			jobID := ""
			if len(args) == 1 {
				jobID = args[0]
			} else {
				var err error
				if jobID, err = latestJob(opts.sharedDir); err != nil {
					return err
				}
			}
			return collectRun(cmd.Context(), io, jobID, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	opts.attempt = -1
	f.Var(newestInt{flag: "--attempt", p: &opts.attempt}, "attempt", "attempt to collect: 0 is the first run, n the n-th requeue")
	f.BoolVar(&opts.partial, "partial", false, "collect a job that is still running; running nodes are shown as running, never as SUCCESS")
	f.StringVar(&opts.appendTo, "append", "", "also append the rows to this perf.csv (locked, header union, atomic)")
	f.BoolVar(&opts.check, "check", false, "judge the job against --against and exit 3 when a row regressed")
	f.StringVar(&opts.against, "against", results.AgainstReference, "with --check: reference, last, best or a job id")
	f.StringVar(&opts.junit, "junit", "", "write JUnit XML of the rows (and of --check's verdicts) to this file")
	f.StringVar(&opts.threshold, "threshold", "5%", "with --check: the tolerated change of a metric whose rule gives none")
	out := outputFlag(cmd, &opts.output, results.FormatsOf(results.KindCollect)...)
	out.other = func(v string) (string, bool) {
		// The old -o FILE: a value that is no format and looks like a file (perf.csv, ./csv).
		if !strings.ContainsAny(v, "./") {
			return "", false
		}
		opts.oldAppend = v
		return deprecation("-o "+v+" (a file to append to)", "--append "+v), true
	}
	out.hint = "--append FILE appends the rows to a perf.csv"
	choiceFlag(cmd, f, &opts.output, "format", "", "table", "old spelling of -o", results.FormatsOf(results.KindCollect)...)
	deprecate(cmd, "format", func(v string) string { return "-o " + v })
	f.BoolVar(&opts.latest, "latest", false, "collect the newest job of the shared directory (benchctl jobs lists them)")
	f.StringVar(&opts.baseline, "baseline", "", "an earlier perf.csv: fill relative_change with the change against it, in percent")
	f.BoolVar(&opts.noSlurm, "no-slurm", false, "do not ask Slurm: judge the job by its files alone (as jobs --no-slurm)")
	_ = cmd.MarkFlagFilename("append", "csv")
	_ = cmd.MarkFlagFilename("baseline", "csv")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

func collectRun(ctx context.Context, io iostreams.Streams, jobID string, opts *collectOptions) error {
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	started, lastLog := time.Now(), time.Now()
	col, err := results.Collect(ctx, results.CollectOptions{
		SharedDir: dir, JobID: jobID, Attempt: opts.attempt, Partial: opts.partial, AppendTo: opts.appendTo, Baseline: opts.baseline,
		Scheduler: newCollectScheduler(opts.noSlurm),
		Aggregate: results.AggregateOptions{CollectedBy: currentBuild().Version, Progress: func(n int) {
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
	if opts.appendTo != "" {
		slog.Info("appended", "file", opts.appendTo, "rows", len(col.Perf.Rows))
	}
	write := func(w goio.Writer) error { return results.ExportCollect(w, opts.output, s, col.Perf) }
	if opts.output == results.FormatTable {
		write = colouredTable(io, "STATUS", write)
	}
	if err := writeShown(io, opts.output, write); err != nil {
		return err
	}
	if !opts.partial { // --partial only looks
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

// collectCheck judges the collected job against --against and writes --junit. The first
// error is the check's verdict (a regression, exit 3), the second what kept it from being made.
func collectCheck(l jobdir.Layout, col *results.Collection, opts *collectOptions) (verdict, err error) {
	var cmp *results.Comparison
	against := ""
	if opts.check {
		cmp, against, err = results.Check(l, col.Dir, opts.against, results.CompareOptions{Threshold: opts.thresholdPct})
		var ae *results.AgainstError
		switch {
		case errors.As(err, &ae):
			slog.Warn("nothing to check against: "+ae.Msg, "job", col.Dir.JobID)
		case err != nil:
			return nil, err
		default:
			n := cmp.Counts()
			slog.Info("checked", "against", against, "regressed", n[results.VerdictRegressed], "improved", n[results.VerdictImproved],
				"no change", n[results.VerdictSame], "inconclusive", n[results.VerdictInconclusive], "not in both", n[results.VerdictOnlyBase]+n[results.VerdictOnlyNew])
		}
	}
	if opts.junit != "" {
		var buf bytes.Buffer
		if err := results.WriteJUnit(&buf, col.Summary, col.Perf, cmp, against); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(opts.junit, buf.Bytes()); err != nil {
			return nil, fmt.Errorf("writing --junit %s: %w", opts.junit, err)
		}
		slog.Info("wrote JUnit XML", "file", opts.junit)
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

// latestJob is the job of the shared directory that started last.
func latestJob(flag string) (string, error) {
	dir, err := sharedDir(flag)
	if err != nil {
		return "", err
	}
	l := jobdir.Layout{Shared: dir}
	id, err := l.Newest()
	if err != nil {
		return "", fmt.Errorf("listing the jobs of %s: %w", dir, err)
	}
	if id == "" {
		return "", usagef("run a job first, or give --shared-dir (default $BENCHCTL_SHARED_DIR)", "--latest: there are no jobs in %s", l.Jobs())
	}
	slog.Info("collecting the newest job", "job", id)
	return id, nil
}

// completeJobIDs completes job ids from the shared directory's jobs/ folder, newest first.
func completeJobIDs(flag *string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dir, err := sharedDir(*flag)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		jobs, _ := jobdir.Layout{Shared: dir}.List()
		out := make([]string, len(jobs))
		for i, j := range jobs {
			out[i] = j.ID
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/compare"
	"github.com/benchctl/benchctl/results/report"
)

// CollectOptions say which job to collect and how.
type CollectOptions struct {
	SharedDir string
	JobID     string
	Attempt   int  // negative: the newest attempt
	Partial   bool // collect a job that is still running
	AppendTo  string
	// Baseline is an earlier perf.csv: relative_change compares with it.
	Baseline string
	// Scheduler is asked about the job (JobState, once, for the newest attempt only); nil
	// decides from the status files alone. An error is reported as a warning and the
	// status files decide.
	Scheduler jobdir.Scheduler
	Aggregate results.AggregateOptions // Partial and Scheduler are set by Collect
}

// Collection is a collected job: its summary, perf.csv, the files written, and warnings
// for the caller to log.
type Collection struct {
	Dir jobdir.Dir
	// Scheduler is what the scheduler said about the job (the zero value when it was not
	// asked, or could not say): jobdir.Layout.RemoveSubmittedWhenEnded decides from it.
	Scheduler jobdir.SchedulerState
	Summary   *results.Summary
	Perf      *results.Table
	// Report is what report.html shows: the summary, and the job's past (trend, reference).
	Report   *report.View
	Written  []string
	Warnings []string
}

// Collect finds a job's folder (newest attempt unless one is asked for), refuses a job that
// is still running unless Partial, aggregates every node folder, and writes perf.csv,
// summary.json and report.html atomically into the job folder; with AppendTo it also
// appends perf.csv's rows to that file (see AppendCSV). A collected job with failures is
// not an error here: Summary.Err says so.
//
// Running is decided by the scheduler when it knows the job (only for the newest attempt:
// an older one was ended by the requeue), else from the status files: a node whose outcome
// is running and that has no finishedAt is still running. With a *RunningError the
// Collection is returned too, with only Dir and Warnings set.
func Collect(ctx context.Context, opts CollectOptions) (*Collection, error) {
	if opts.AppendTo != "" {
		if err := CheckAppendTarget(opts.AppendTo); err != nil {
			return nil, err
		}
	}
	var base *results.Table
	if opts.Baseline != "" {
		var err error
		if base, err = compare.ReadBaseline(opts.Baseline); err != nil {
			return nil, err
		}
	}
	dir, err := jobdir.Layout{Shared: opts.SharedDir}.Find(opts.JobID, opts.Attempt)
	if err != nil {
		return nil, err
	}
	c := &Collection{Dir: dir}
	var sched jobdir.SchedulerState
	if opts.Scheduler != nil && dir.Latest() {
		sched, err = opts.Scheduler.JobState(ctx, dir.JobID)
		if err != nil {
			c.Warnings = append(c.Warnings, fmt.Sprintf("asking the scheduler about job %s: %v; deciding from the status files", dir.JobID, err))
			sched = jobdir.SchedulerState{}
		}
		c.Scheduler = sched
	}
	if sched.Known && sched.Active && !opts.Partial {
		return c, &results.RunningError{JobID: dir.JobID, Attempt: dir.Attempt, Reason: sched.Says() + " " + sched.State}
	}
	aopts := opts.Aggregate
	aopts.Partial, aopts.Scheduler = opts.Partial, sched
	s, err := results.Aggregate(ctx, dir, aopts)
	if err != nil {
		return nil, err
	}
	if len(s.Running) > 0 && !opts.Partial {
		return c, &results.RunningError{JobID: dir.JobID, Attempt: dir.Attempt, Reason: results.RunningReason(s.Running)}
	}
	c.Summary = s
	c.Perf = results.PerfTable(s)
	if base != nil {
		if n := compare.ApplyBaseline(c.Perf, base); n < len(c.Perf.Rows) {
			c.Warnings = append(c.Warnings, fmt.Sprintf("the baseline %s has a comparable row for %d of %d rows; relative_change is empty for the others", opts.Baseline, n, len(c.Perf.Rows)))
		}
	}
	c.Report = report.NewView(jobdir.Layout{Shared: opts.SharedDir}, dir, s, c.Perf)
	if c.Written, err = writeOutputs(dir, c.Report, c.Perf); err != nil {
		var oe *safefile.OwnerError
		if !errors.As(err, &oe) {
			return nil, err
		}
		// Another user's job folder: what was collected is shown, nothing is written there.
		c.Warnings = append(c.Warnings, err.Error())
	}
	if opts.AppendTo != "" {
		if err := AppendCSV(ctx, opts.AppendTo, c.Perf); err != nil {
			return nil, err
		}
		c.Written = append(c.Written, opts.AppendTo)
	}
	return c, nil
}

// WriteOutputs writes perf.csv, summary.json and report.html (of the summary alone, without
// the job's past) into the job folder dir, each atomically, and returns their paths.
func WriteOutputs(dir jobdir.Dir, s *results.Summary, perf *results.Table) ([]string, error) {
	return writeOutputs(dir, &report.View{Summary: s}, perf)
}

// writeOutputs writes perf.csv, summary.json and report.html (of the view v) into the job
// folder dir, each atomically, and returns their paths.
func writeOutputs(dir jobdir.Dir, v *report.View, perf *results.Table) ([]string, error) {
	s := v.Summary
	csvData, err := results.EncodeCSV(perf)
	if err != nil {
		return nil, fmt.Errorf("encoding perf.csv: %w", err)
	}
	sumData, err := results.EncodeSummary(s)
	if err != nil {
		return nil, err
	}
	var html bytes.Buffer
	if err := report.WriteView(&html, v); err != nil {
		return nil, fmt.Errorf("rendering the report: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{{jobdir.PerfFile, csvData}, {jobdir.SummaryFile, sumData}, {jobdir.ReportFile, html.Bytes()}}
	// Written through the job folder's descriptor, opened once: a folder swapped for a link
	// meanwhile is not written through, and a folder that is neither the caller's nor (for
	// root) any user's own job folder is not written at all.
	real, err := filepath.EvalSymlinks(dir.Path) // a job folder linked in from elsewhere is read and written where it is
	if err != nil {
		return nil, err
	}
	d, err := safefile.OpenDir(real)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if uid := os.Getuid(); uid != 0 {
		if err := safefile.CheckOwner(d, uid); err != nil {
			return nil, fmt.Errorf("perf.csv, summary.json and report.html are not written into %s, which is not this user's folder: %w (collect the job as its owner to write them; -o csv or json prints them)", dir.Path, err)
		}
	}
	var written []string
	for _, f := range files {
		if err := atomicfile.WriteFileAt(d, f.name, f.data, 0o644); err != nil {
			return written, err
		}
		written = append(written, dir.Output(f.name))
	}
	return written, nil
}

package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goio "io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/scheduler"
)

// SubmitOptions are benchctl submit's flags.
type SubmitOptions struct {
	Src         ManifestSource
	Tools       ToolFlags
	SharedDir   string
	Nodes       int
	Partition   string
	Account     string
	Qos         string
	Time        string
	GpusPerNode int
	Exclusive   bool
	Requeue     bool
	SbatchArgs  []string
	Record      string
	Benchmarks  []string
	DryRun      bool
	Wait        bool
	Collect     bool
	Output      string
	Engine      string
	Runtime     string // --runtime: over the manifest's runtime:, passed to every node's run
	// Submitter starts the job (set in RunE: Slurm, with the Slurm flags given, which
	// override the manifest's slurm: block; a flag not given leaves the manifest's value).
	Submitter scheduler.Submitter
}

// Submitted is what submit -o json prints: the job and its paths, and with --wait how it
// ended, with --collect what collect -o json prints (summary.json).
type Submitted struct {
	Job      string          `json:"job"`
	Nodes    int             `json:"nodes"`
	Script   string          `json:"script"`
	JobDir   string          `json:"jobDir"`
	State    string          `json:"state,omitempty"`
	Outcomes []nodeOutcome   `json:"outcomes,omitempty"`
	Collect  json.RawMessage `json:"collect,omitempty"`
}

// nodeOutcome is one node of a followed job.
type nodeOutcome struct {
	Node     string `json:"node"`
	Outcome  string `json:"outcome"`
	Phase    string `json:"phase"`
	ExitCode int    `json:"exitCode"`
}

// Submit submits a job to the scheduler, and with --wait or --collect follows it.
func Submit(ctx context.Context, io iostreams.Streams, opts *SubmitOptions) error {
	m, err := opts.Src.load()
	if err != nil {
		return err
	}
	if err := opts.Tools.apply(ctx, m); err != nil { // checked here, before the job waits in the queue
		return err
	}
	if err := applyRuntime(m, opts.Runtime, opts.Engine); err != nil {
		return err
	}
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the benchctl binary: %w", err)
	}
	self, _ = filepath.EvalSymlinks(self)
	selected, err := runner.SelectBenchmarks(m, opts.Benchmarks)
	if err != nil {
		hint := "list the benchmarks with 'benchctl validate --manifest " + opts.Src.Manifest + "'"
		if len(opts.Src.Tags) > 0 {
			hint = "list the models with 'benchctl models list --catalog models.json --tags " + strings.Join(opts.Src.Tags, ",") + "'"
		}
		return exitcode.Usagef(hint, "%v", err)
	}
	if opts.Submitter == nil {
		return errors.New("submit was handed no scheduler to submit to") // wiring, not the user's input
	}
	sub := scheduler.Submission{Manifest: m, Selected: selected, Benchmarks: opts.Benchmarks, Benchctl: self, SharedDir: dir,
		Requeue: opts.Requeue, Engine: engineKind(opts.Engine, m), Runtime: opts.Runtime}
	if err := submitSource(opts.Src, &sub); err != nil {
		return err
	}
	sub.Tools, sub.ToolsSet = opts.Tools.Names, opts.Tools.Set
	if opts.Tools.File != "" {
		if sub.ToolsFile, err = filepath.Abs(opts.Tools.File); err != nil {
			return err
		}
	}
	if opts.Record != "" {
		if sub.Record, err = filepath.Abs(opts.Record); err != nil {
			return err
		}
		if _, err := os.Stat(sub.Record); err != nil {
			return exitcode.Usagef("pass the file written by benchctl build --record", "--record: %v", err)
		}
	}
	if opts.DryRun {
		plan, err := opts.Submitter.DryRun(sub)
		if err != nil {
			return err
		}
		if opts.Output == "json" {
			return writeJSON(io.Out(), plan.Document)
		}
		fmt.Fprint(io.Out(), plan.Text)
		return nil
	}
	layout := jobdir.Layout{Shared: dir}
	pruneSubmitted(ctx, opts.Submitter, layout)
	done, err := opts.Submitter.Submit(ctx, sub)
	if err != nil {
		return err
	}
	id := done.Job
	rep := Submitted{Job: id, Nodes: done.Nodes, Script: done.Request, JobDir: layout.Job(id, 0).Path}
	if opts.Output != "json" {
		fmt.Fprintln(io.Out(), id)
	}
	if done.Token != "" { // Slurm's: its secret and script in jobs/.submit
		if err := layout.RecordSubmitted(done.Token, id); err != nil {
			slog.Warn("could not record the job's submission files; benchctl submit removes them after 7 days", "err", err)
		}
	}
	slog.Info("submitted", "job", id, "nodes", done.Nodes, "script", done.Request, "jobDir", rep.JobDir)
	if !opts.Wait {
		if opts.Output == "json" {
			return writeJSON(io.Out(), rep)
		}
		return nil
	}
	end, ferr := followJob(ctx, opts.Submitter, dir, id, done.Nodes)
	if end.Dir.Path != "" {
		rep.JobDir = end.Dir.Path // the attempt that ran last
	}
	rep.State = end.State
	for _, n := range end.Nodes {
		rep.Outcomes = append(rep.Outcomes, nodeOutcome{Node: n.Node, Outcome: n.Outcome, Phase: n.Phase, ExitCode: n.ExitCode})
	}
	if opts.Output != "json" {
		printOutcomes(io, end.Nodes)
	}
	if done.Token != "" {
		removeSubmittedWhenEnded(layout, id, end.Scheduler)
	}
	err = ferr
	if opts.Collect && ctx.Err() == nil {
		if ferr != nil {
			slog.Warn(ferr.Error())
		}
		copts := &CollectOptions{Job: id, SharedDir: dir, Attempt: -1, Output: opts.Output}
		if opts.Output != "json" {
			return Collect(ctx, io, copts)
		}
		var summary bytes.Buffer
		err = Collect(ctx, iostreams.New(io.In(), &summary, io.ErrOut()), copts)
		if summary.Len() > 0 {
			rep.Collect = json.RawMessage(bytes.TrimSpace(summary.Bytes()))
		}
	}
	if opts.Output == "json" {
		if jerr := writeJSON(io.Out(), rep); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

// pruneSubmitted removes old submission files (secrets above all) of jobs that have ended.
func pruneSubmitted(ctx context.Context, s scheduler.Submitter, l jobdir.Layout) {
	n, err := s.Prune(ctx, l, time.Now())
	if err != nil {
		slog.Warn("pruning old submission files in "+l.Submit(), "err", err)
	}
	if n > 0 {
		slog.Info("removed the submission files of ended jobs", "count", n, "folder", l.Submit())
	}
}

// removeSubmittedWhenEnded removes a job's submission files (its secret) once Slurm has
// said it ended (jobdir.Layout.RemoveSubmittedWhenEnded), and says when that failed.
func removeSubmittedWhenEnded(l jobdir.Layout, id string, st jobdir.SchedulerState) {
	if _, err := l.RemoveSubmittedWhenEnded(id, st); err != nil {
		slog.Warn("could not remove the job's submission files", "job", id, "err", err)
	}
}

// followJob waits for a submitted job, logging its nodes' phases, and returns how it ended
// and the job's verdict (jobdir.Judge).
func followJob(ctx context.Context, s scheduler.Scheduler, shared, id string, world int) (jobdir.Ended, error) {
	end, err := jobdir.Follow{Layout: jobdir.Layout{Shared: shared}, JobID: id, World: world, Scheduler: s,
		Line: func(line string, err error) {
			if err != nil {
				title, said := scheduler.Told(s, err)
				slog.Warn(title + " did not answer about job " + id + " (" + said + ")")
			}
			slog.Info(line)
		}}.Run(ctx)
	if err == nil {
		slog.Info("job finished", "job", id, "state", end.State, "jobDir", end.Dir.Path)
	}
	return end, err
}

// printOutcomes is the table of a followed job's nodes.
func printOutcomes(io iostreams.Streams, nodes []jobdir.NodeProgress) {
	if nodes == nil {
		return
	}
	_ = colouredTable(io, "OUTCOME", func(w goio.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tOUTCOME\tLAST PHASE")
		for _, n := range nodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Node, n.Outcome, n.Phase)
		}
		return tw.Flush()
	})(io.Out()) // stdout that cannot be written to: nothing to tell, as before
}

// submitSource makes the job run what src names: the manifest, or with --tags the models of
// the MAD checkout in the working folder, with madengine's context. An inline --context
// that names a credential is refused: the job script would hold its value.
func submitSource(src ManifestSource, j *scheduler.Submission) error {
	if len(src.Tags) == 0 {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("finding the MAD checkout (the working folder): %w", err)
	}
	j.Tags, j.Checkout, j.Context, j.RunGenerators = src.Tags, wd, src.Context, src.Generators
	if src.ContextFile != "" {
		if j.ContextFile, err = filepath.Abs(src.ContextFile); err != nil {
			return err
		}
	}
	var keys map[string]map[string]json.RawMessage
	_ = json.Unmarshal([]byte(src.Context), &keys) // loading the checkout checked it already
	for _, key := range []string{"docker_env_vars", "docker_build_arg"} {
		for name := range keys[key] {
			if manifest.CredentialLike(name) {
				return exitcode.Usagef("put the context in a file only you can read and give --context-file FILE",
					"--context: %s.%s looks like a credential, and the job script would hold its value", key, name)
			}
		}
	}
	return nil
}

package slurm

import (
	"context"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// Submitter is Slurm as a scheduler.Submitter: a job is an sbatch script in jobs/.submit,
// its options the command line's Overrides, then the manifest's slurm: block, then the
// defaults.
type Submitter struct {
	Scheduler
	Overrides Overrides
}

var _ scheduler.Submitter = Submitter{}

// DryRunDocument is what submit --dry-run -o json prints: sbatch's arguments and the script.
type DryRunDocument struct {
	Sbatch []string `json:"sbatch"`
	Script string   `json:"script"`
}

// job is the sbatch job of a submission, checked: options sbatch would refuse (or take
// for something else) are bad input, exit 4.
func (s Submitter) job(sub scheduler.Submission) (Job, error) {
	j := JobForBenchmarks(sub.Manifest, sub.Selected, s.Overrides)
	j.Benchctl, j.SharedDir, j.Benchmarks, j.Requeue, j.Engine, j.Record = sub.Benchctl, sub.SharedDir, sub.Benchmarks, sub.Requeue, sub.Engine, sub.Record
	j.Runtime = sub.Runtime
	j.Tags, j.Checkout, j.Context, j.ContextFile, j.RunGenerators = sub.Tags, sub.Checkout, sub.Context, sub.ContextFile, sub.RunGenerators
	j.Tools, j.ToolsSet, j.ToolsFile = sub.Tools, sub.ToolsSet, sub.ToolsFile
	if err := j.Validate(); err != nil {
		return Job{}, exitcode.Usagef("see 'benchctl submit --help'", "%v", err)
	}
	return j, nil
}

// DryRun is the sbatch command line (each argument quoted for a shell) and the script that
// Submit would write, with a placeholder for the secret's token.
func (s Submitter) DryRun(sub scheduler.Submission) (scheduler.Plan, error) {
	j, err := s.job(sub)
	if err != nil {
		return scheduler.Plan{}, err
	}
	l := jobdir.Layout{Shared: sub.SharedDir}
	j.OutputDir = l.Submit()
	j.SecretFile = l.SubmitFiles("<token>").Secret
	script, err := j.Script()
	if err != nil {
		return scheduler.Plan{}, err
	}
	argv := j.SbatchArgv()
	doc := DryRunDocument{Sbatch: append([]string(nil), argv...), Script: script}
	for i := range argv {
		argv[i] = Quote(argv[i])
	}
	return scheduler.Plan{Text: "# sbatch " + strings.Join(argv, " ") + " <script>\n" + script, Document: doc}, nil
}

// Submit writes the job's secret and script (Prepare) and runs sbatch.
func (s Submitter) Submit(ctx context.Context, sub scheduler.Submission) (scheduler.Submitted, error) {
	j, err := s.job(sub)
	if err != nil {
		return scheduler.Submitted{}, err
	}
	script, err := Prepare(&j)
	if err != nil {
		return scheduler.Submitted{}, err
	}
	id, err := Submit(ctx, s.commander(), j, script)
	if err != nil {
		return scheduler.Submitted{}, err
	}
	return scheduler.Submitted{Job: id, Nodes: j.Nodes, Request: script, Token: j.Token}, nil
}

// Prune removes the submission files of ended jobs (PruneSubmitted).
func (s Submitter) Prune(ctx context.Context, l jobdir.Layout, now time.Time) (int, error) {
	return PruneSubmitted(ctx, s.commander(), l, now)
}

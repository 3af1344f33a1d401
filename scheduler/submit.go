package scheduler

import (
	"context"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// Submission is a job to start, in benchctl's words: what every node's `benchctl run` is
// handed, whatever starts it. A Submitter turns it into its scheduler's request (Slurm: an
// sbatch script and options).
type Submission struct {
	Manifest *manifest.Manifest
	// Selected are the benchmarks the job runs (--benchmarks, --tags), which say how many
	// GPUs a node needs; Benchmarks are the names as given, passed on to every node.
	Selected   []manifest.Benchmark
	Benchmarks []string
	Benchctl   string // absolute path of the benchctl binary on the nodes
	SharedDir  string // absolute
	Record     string // optional build record, absolute
	Engine     string // run's and cleanup's --engine, when the user chose one
	Runtime    string // run's and cleanup's --runtime, when the user chose one
	Requeue    bool   // the scheduler may requeue the job (a new attempt of the same id)
	// Tags, with Checkout, runs the models of a MAD checkout instead of the manifest's file,
	// with madengine's context as Context (JSON) or ContextFile (a path); RunGenerators
	// passes --run-get-models-json on.
	Tags          []string
	Checkout      string
	Context       string
	ContextFile   string
	RunGenerators bool
	// Tools (when ToolsSet: run's --tools, empty clearing the manifest's) and ToolsFile
	// (--tools-file, absolute) pass the tools to every node's run.
	Tools     []string
	ToolsSet  bool
	ToolsFile string
}

// Submitted is what a scheduler accepted: the job's id, its node count, the request a
// person can read (Slurm: the script's path) and the token that names the submission's
// files in jobs/.submit (its secret above all).
type Submitted struct {
	Job     string
	Nodes   int
	Request string
	Token   string
}

// Plan is a submission shown, not made (--dry-run): Text for a person, Document for
// -o json.
type Plan struct {
	Text     string
	Document any
}

// Submitter is a scheduler that can start a job: submit, job state and wait (the
// Scheduler it is), and pruning what its submissions left. `benchctl submit` speaks only
// this; a scheduler's own options (Slurm's partition, account, sbatch arguments) are the
// Submitter value's fields, set from the command's flags and the manifest's block.
type Submitter interface {
	Scheduler
	// DryRun is what Submit would ask of the scheduler, checked as Submit checks it; it
	// writes nothing.
	DryRun(s Submission) (Plan, error)
	// Submit writes the submission's files (jobdir's jobs/.submit: the secret and the
	// request) and asks the scheduler to start the job. A request the scheduler refuses is
	// an error saying why, and nothing is left running.
	Submit(ctx context.Context, s Submission) (Submitted, error)
	// Prune removes the submission files of jobs that have ended, older than the
	// scheduler's keep; a job it cannot ask about is kept. It returns how many went.
	Prune(ctx context.Context, l jobdir.Layout, now time.Time) (int, error)
}

// Canceller is a scheduler that can end a job it started (`benchctl cancel`). Cancel
// reports whether id is one of its jobs' ids at all (false: ask another scheduler); a job
// it does not have is an input error.
type Canceller interface {
	Cancel(ctx context.Context, id string) (mine bool, err error)
}

package jobdir

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
)

// Node outcomes (Status.Outcome) and benchmark outcomes (BenchmarkStatus.Outcome).
const (
	OutcomeRunning   = "running"
	OutcomeSuccess   = "success"
	OutcomeFailure   = "failure"
	OutcomeTimeout   = "timeout"
	OutcomeCancelled = "cancelled"
	OutcomeSkipped   = "skipped" // benchmarks only
	// OutcomeAborted is a benchmark stopped because the job was aborted (another node
	// failed, or a node was lost); its Error says why.
	OutcomeAborted = "aborted" // benchmarks only
	// OutcomeLost is a node that stopped without recording its end (killed, crashed),
	// as recorded by benchctl cleanup.
	OutcomeLost = "lost"
)

// SkipArchPrefix starts the error of a benchmark a node skipped because the MAD model's
// skip_gpu_arch names the node's GPU architecture: collect reports a benchmark that every
// node skipped so as SKIPPED, not as a failure.
const SkipArchPrefix = "skipped for the GPU architecture"

// NodeOutcomes are the outcomes a node's status can end with (and running); BenchOutcomes
// those of a benchmark on a node.
var (
	NodeOutcomes  = []string{OutcomeRunning, OutcomeSuccess, OutcomeFailure, OutcomeTimeout, OutcomeCancelled, OutcomeLost}
	BenchOutcomes = []string{OutcomeRunning, OutcomeSuccess, OutcomeFailure, OutcomeTimeout, OutcomeCancelled, OutcomeSkipped, OutcomeAborted}
)

// Phase names and phase outcomes (PhaseStatus).
const (
	PhaseContext = "context"
	PhaseBarrier = "barrier"
	PhaseImage   = "image"
	PhaseRun     = "run"
	PhaseResults = "results"

	PhaseOK      = "ok"
	PhaseFailed  = "failed"
	PhaseSkipped = "skipped"
)

// StatusVersion is the schema version of status.json that this package writes.
const StatusVersion = 1

// MaxStatusSize bounds how much of a status.json (or job.json) is read: 16 MiB.
const MaxStatusSize = 16 << 20

// Status is a node's status.json: written by the node at the start, at every phase change
// and at the end, whatever the end is. The runner writes the same schema.
type Status struct {
	Version    int               `json:"version"`
	Job        string            `json:"job"`
	Attempt    int               `json:"attempt"`
	Rank       int               `json:"rank"`
	Host       string            `json:"host"`
	World      int               `json:"world"`
	Outcome    string            `json:"outcome"`
	ExitCode   int               `json:"exitCode"`
	Error      string            `json:"error"`
	ImageID    string            `json:"imageId"`
	ImageKey   string            `json:"imageKey"`
	StartedAt  time.Time         `json:"startedAt"`
	FinishedAt *time.Time        `json:"finishedAt,omitempty"`
	Phases     []PhaseStatus     `json:"phases"`
	Benchmarks []BenchmarkStatus `json:"benchmarks"`
	// Trials counts the records of the node's trial log (TrialLogFile): in a job with an
	// experiment, a trial run's record moves there when the run ends, and Benchmarks keeps
	// only the runs outside trials and the trial running now (ReadNodeStatus merges them).
	Trials int `json:"trials,omitempty"`
	// The node's GPUs, from its inventory: how many, their architecture (gfx942, sm_90)
	// and product name; empty without GPUs.
	GPUCount int    `json:"gpuCount,omitempty"`
	GPUArch  string `json:"gpuArch,omitempty"`
	GPUName  string `json:"gpuName,omitempty"`
}

// PhaseStatus is one phase of a node's run: context, barrier, image, run, results.
type PhaseStatus struct {
	Name       string     `json:"name"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	Outcome    string     `json:"outcome"`
	Error      string     `json:"error"`
}

// BenchmarkStatus is one benchmark's run on a node. Log and Diagnostics are relative to
// the node's folder.
type BenchmarkStatus struct {
	Name            string     `json:"name"`
	Outcome         string     `json:"outcome"`
	ExitCode        int        `json:"exitCode"`
	Error           string     `json:"error"`
	StartedAt       time.Time  `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt,omitempty"`
	DurationSeconds float64    `json:"durationSeconds"`
	Log             string     `json:"log"`
	Diagnostics     string     `json:"diagnostics,omitempty"`
	// GPUs is how many GPUs the benchmark's container got on this node.
	GPUs int `json:"gpus,omitempty"`
	// ImageID is the image its container ran (a job's benchmarks may run on several).
	ImageID string `json:"imageId,omitempty"`
	// In a job with an experiment, one record per trial the node ran: Trial is the trial's
	// place in the job's plan (from 1; its files are named TrialRunName(Name, Trial)),
	// Variant the variant's id, VariantTrial the trial's number within the variant (the
	// warmups first) and Warmup whether it is one (never counted).
	Trial        int    `json:"trial,omitempty"`
	Variant      string `json:"variant,omitempty"`
	VariantTrial int    `json:"variantTrial,omitempty"`
	Warmup       bool   `json:"warmup,omitempty"`
}

// RunName is the name of the record's files in the node folder: the benchmark's, or in a
// trial TrialRunName's.
func (b BenchmarkStatus) RunName() string {
	if b.Trial > 0 {
		return TrialRunName(b.Name, b.Trial)
	}
	return b.Name
}

// Running reports whether the node says it is still at work: outcome running and no end.
func (s *Status) Running() bool { return s.Outcome == OutcomeRunning && s.FinishedAt == nil }

// Benchmark returns the node's record of the named benchmark, or nil; in a job with an
// experiment, name is a trial's run name (TrialRunName).
func (s *Status) Benchmark(name string) *BenchmarkStatus {
	for i := range s.Benchmarks {
		if s.Benchmarks[i].RunName() == name {
			return &s.Benchmarks[i]
		}
	}
	return nil
}

// FailedPhase returns the first phase that failed, or nil.
func (s *Status) FailedPhase() *PhaseStatus {
	for i := range s.Phases {
		if s.Phases[i].Outcome == PhaseFailed {
			return &s.Phases[i]
		}
	}
	return nil
}

// ReadStatus reads a status.json. Unknown fields are ignored (a newer runner may add some);
// a file that is not JSON, or is larger than 16 MiB, is an error.
// A FIFO, a link or any other non-regular file is refused (without blocking).
func ReadStatus(path string) (*Status, error) {
	var r safefile.Reader
	return ReadStatusWith(&r, path)
}

// ReadStatusWith is ReadStatus with a reader whose buffer is reused (for a worker that
// reads thousands of node folders).
func ReadStatusWith(r *safefile.Reader, path string) (*Status, error) {
	data, err := r.ReadNoFollow(path, MaxStatusSize)
	if err != nil {
		return nil, err
	}
	var s Status
	if err := decodeFile(path, data, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// WriteStatus writes s to path atomically (temp file, fsync, rename, fsync the folder), so
// a reader never sees half a status.
func WriteStatus(path string, s *Status) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

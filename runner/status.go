package runner

import (
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner/nodestatus"
)

// The status.json schema is jobdir's: the runner writes it, collect reads it back. The
// names are shortened here for the runner's many uses.
type (
	Status          = jobdir.Status
	PhaseStatus     = jobdir.PhaseStatus
	BenchmarkStatus = jobdir.BenchmarkStatus
)

// Outcomes of a node, a phase or a benchmark (status.json).
const (
	OutcomeRunning   = jobdir.OutcomeRunning
	OutcomeSuccess   = jobdir.OutcomeSuccess
	OutcomeFailure   = jobdir.OutcomeFailure
	OutcomeTimeout   = jobdir.OutcomeTimeout
	OutcomeCancelled = jobdir.OutcomeCancelled
	OutcomeSkipped   = jobdir.OutcomeSkipped
	OutcomeAborted   = jobdir.OutcomeAborted
	OutcomeLost      = jobdir.OutcomeLost
	PhaseOK          = jobdir.PhaseOK
	PhaseFailed      = jobdir.PhaseFailed
)

// statusFile is the node's status.json as the run keeps it (package nodestatus).
type statusFile = nodestatus.File

func newStatusFile(node *jobdir.NodeFolder, n Node) *statusFile {
	return nodestatus.New(node, n.JobID, n.Attempt, n.Rank, n.Host, n.World)
}

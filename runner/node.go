package runner

import (
	"errors"

	"github.com/benchctl/benchctl/scheduler"
)

// Node is this process's place in the job: the node context a scheduler read from the
// environment (scheduler.DetectNode), handed to Run, Plan and Doctor. runner never asks a
// scheduler itself.
type Node = scheduler.Node

// ContextError is a bad or inconsistent input of the run that is not the manifest's
// (--benchmarks, the node context missing): exit 4.
type ContextError struct{ Var, Msg string }

func (e *ContextError) Error() string      { return e.Var + ": " + e.Msg }
func (e *ContextError) InvalidInput() bool { return true }

// ErrNoNode is a run handed no node context.
var ErrNoNode = errors.New("no node context: the caller reads it from the environment (scheduler.DetectNode) and hands it in Options.Node")

// node is the node context the run was handed, checked to be one.
func (o Options) node() (Node, error) {
	n := o.Node
	if n.World < 1 || n.Rank < 0 || n.Rank >= n.World || n.JobID == "" || n.MasterPort == 0 {
		return n, ErrNoNode
	}
	return n, nil
}

// ValidJobID checks that a job id can name a folder under jobs/ (and a container label).
func ValidJobID(id string) error { return scheduler.ValidJobID(id) }

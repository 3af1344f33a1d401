package runner

import (
	"fmt"

	"github.com/benchctl/benchctl/manifest"
)

// ExperimentError is an experiment this job cannot run (exit 4).
type ExperimentError struct{ Msg string }

func (e *ExperimentError) Error() string      { return e.Msg }
func (e *ExperimentError) InvalidInput() bool { return true }

// CheckExperimentFits refuses an experiment whose largest variant needs more nodes than
// the job has.
func CheckExperimentFits(x *manifest.Experiment, world int) error {
	if x == nil {
		return nil
	}
	for _, v := range x.Variants {
		if v.Nodes > world {
			return &ExperimentError{Msg: fmt.Sprintf("experiment: variant %s uses %d nodes but the job has %d: submit it with --nodes %d or more (benchctl submit asks for the largest variant's count by default), or remove %d from experiment.matrix.nodes", v.ID, v.Nodes, world, x.MaxNodes(), v.Nodes)}
		}
	}
	return nil
}

// variantNode is the node as a variant of nodes nodes sees it (NNODES, WORLD_SIZE and the
// host list describe the variant's ranks 0..nodes-1); 0 is every node of the job.
func variantNode(n Node, nodes int) Node {
	if nodes == 0 || nodes >= n.World {
		return n
	}
	n.World = nodes
	if len(n.Hosts) > nodes {
		n.Hosts = n.Hosts[:nodes]
	}
	return n
}

// runsIn reports whether rank runs the variant's containers (a variant of k nodes runs on
// ranks 0..k-1).
func runsIn(v manifest.Variant, rank int) bool { return v.Nodes == 0 || rank < v.Nodes }

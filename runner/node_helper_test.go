package runner

import (
	"testing"

	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/local"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// DetectNode is the node context of an environment as benchctl's commands read it (Slurm,
// then local): the tests hand it to Run, Plan and Doctor as cmd does.
func DetectNode(lookup scheduler.Lookup) (Node, error) {
	return scheduler.DetectNode(lookup, slurm.Scheduler{}, local.Scheduler{})
}

// nodeOf is DetectNode that must succeed.
func nodeOf(t testing.TB, lookup scheduler.Lookup) Node {
	t.Helper()
	n, err := DetectNode(lookup)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A run or plan handed no node context says so rather than running as some default.
func TestARunWithoutANodeContextIsRefused(t *testing.T) {
	if _, err := (Options{}).node(); err != ErrNoNode {
		t.Fatalf("%v", err)
	}
	if _, err := Plan(t.Context(), Options{}); err != ErrNoNode {
		t.Fatalf("plan: %v", err)
	}
	if _, err := Run(t.Context(), Options{}); err != ErrNoNode {
		t.Fatalf("run: %v", err)
	}
}

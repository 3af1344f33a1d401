// Package schedulertest is the conformance suite every scheduler of benchctl passes: what
// its tasks read from their environment agrees across a job's nodes, a garbled variable is
// an error naming it, and a job it does not know is no error. Each scheduler's tests run
// it with a Harness that starts jobs as that scheduler does (the local one from
// environments, Slurm's on the testbed through srun).
package schedulertest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/scheduler"
)

// Harness is one scheduler under test.
type Harness struct {
	Scheduler scheduler.Scheduler
	// Job returns the environments of the tasks of one job of n nodes, as the scheduler
	// starts them (one per task, any order). n runs from 1 to MaxNodes.
	Job      func(t *testing.T, n int) []map[string]string
	MaxNodes int
	// Garbled are environments of the scheduler's tasks, each wrong in the variable Var.
	Garbled []Garbled
	// UnknownJob is a job id the scheduler has never had.
	UnknownJob string
}

// Garbled is an environment wrong in one variable.
type Garbled struct {
	Env map[string]string
	Var string
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("TheTasksOfAJobAgree", func(t *testing.T) {
		for n := 1; n <= h.MaxNodes; n++ {
			tasksAgree(t, h, n)
		}
	})
	t.Run("AGarbledVariableIsNamed", func(t *testing.T) {
		if len(h.Garbled) == 0 {
			t.Fatal("the harness gives no garbled environment: the suite would test nothing")
		}
		for _, g := range h.Garbled {
			if !h.Scheduler.Detect(lookupOf(g.Env)) {
				t.Errorf("%v: not detected as %s's", g.Env, h.Scheduler.Name())
				continue
			}
			_, err := h.Scheduler.Node(lookupOf(g.Env))
			var ii interface{ InvalidInput() bool }
			if err == nil || !strings.HasPrefix(err.Error(), g.Var+":") || !errors.As(err, &ii) || !ii.InvalidInput() {
				t.Errorf("%v: error %v is not bad input naming %s", g.Env, err, g.Var)
			}
		}
	})
	t.Run("AnUnknownJobIsNotActive", func(t *testing.T) {
		st, err := h.Scheduler.JobState(context.Background(), h.UnknownJob)
		if err != nil || st.Active {
			t.Fatalf("%s: %+v, %v", h.UnknownJob, st, err)
		}
		st, err = h.Scheduler.Wait(context.Background(), h.UnknownJob, nil)
		if err != nil || st.Active {
			t.Fatalf("wait %s: %+v, %v", h.UnknownJob, st, err)
		}
	})
}

// tasksAgree starts a job of n nodes and checks its tasks' node contexts.
func tasksAgree(t *testing.T, h Harness, n int) {
	envs := h.Job(t, n)
	if len(envs) != n {
		t.Fatalf("%d nodes: %d tasks", n, len(envs))
	}
	var nodes []scheduler.Node
	for _, env := range envs {
		l := lookupOf(env)
		if !h.Scheduler.Detect(l) {
			t.Fatalf("%s does not detect its own task: %v", h.Scheduler.Name(), env)
		}
		node, err := h.Scheduler.Node(l)
		if err != nil {
			t.Fatalf("%d nodes: %v (environment %v)", n, err, env)
		}
		nodes = append(nodes, node)
	}
	ranks := map[int]bool{}
	names := map[string]bool{}
	first := nodes[0]
	for _, node := range nodes {
		if node.World != n || node.Rank < 0 || node.Rank >= n || ranks[node.Rank] {
			t.Errorf("%d nodes: rank %d of %d (ranks so far %v)", n, node.Rank, node.World, ranks)
		}
		ranks[node.Rank] = true
		if names[node.NodeName()] {
			t.Errorf("%d nodes: two tasks share the node folder %s", n, node.NodeName())
		}
		names[node.NodeName()] = true
		if node.JobID != first.JobID || node.Attempt != first.Attempt || node.DirName() != first.DirName() {
			t.Errorf("%d nodes: job %s attempt %d, and job %s attempt %d", n, node.JobID, node.Attempt, first.JobID, first.Attempt)
		}
		if err := scheduler.ValidJobID(node.JobID); err != nil || node.Attempt < 0 {
			t.Errorf("job id %q attempt %d: %v", node.JobID, node.Attempt, err)
		}
		if node.MasterAddr != first.MasterAddr || !scheduler.ValidHost(node.MasterAddr) {
			t.Errorf("%d nodes: master %q and %q", n, node.MasterAddr, first.MasterAddr)
		}
		if node.MasterPort != first.MasterPort || node.MasterPort < 1024 || node.MasterPort > 65535-17 {
			t.Errorf("%d nodes: master port %d and %d", n, node.MasterPort, first.MasterPort)
		}
		ports := append(append([]int{node.MasterPort}, node.BarrierPorts()...), node.StreamPorts()...)
		slices.Sort(ports)
		if len(slices.Compact(ports)) != 17 {
			t.Errorf("the job's ports overlap: %v", ports)
		}
		if node.Source == "" || node.Source != first.Source || node.Host == "" {
			t.Errorf("%d nodes: source %q host %q", n, node.Source, node.Host)
		}
		if len(node.Hosts) != n || node.Hosts[node.Rank] != node.Host && node.Rank != 0 {
			t.Errorf("%d nodes: rank %d on %s, hosts %v", n, node.Rank, node.Host, node.Hosts)
		}
	}
}

func lookupOf(env map[string]string) scheduler.Lookup {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

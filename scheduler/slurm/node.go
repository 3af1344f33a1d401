package slurm

import (
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/scheduler"
)

var (
	_ scheduler.Scheduler    = Scheduler{}
	_ scheduler.SharedOutput = Scheduler{}
)

// Name is "slurm".
func (Scheduler) Name() string { return "slurm" }

// Detect reports whether the environment belongs to a Slurm job (SLURM_JOB_ID is set).
func (Scheduler) Detect(lookup scheduler.Lookup) bool { return InSlurm(lookup) }

// Node is the task's node context (TaskFromEnv): rank SLURM_PROCID of the step's tasks,
// one per node, rank 0's host the master, the attempt SLURM_RESTART_COUNT.
func (Scheduler) Node(lookup scheduler.Lookup) (scheduler.Node, error) {
	t, err := TaskFromEnv(lookup)
	if err != nil {
		return scheduler.Node{}, err
	}
	n := scheduler.Node{JobID: t.JobID, Attempt: t.Attempt, Rank: t.Rank, World: t.World, Hosts: t.Nodes, Host: t.Host,
		MasterAddr: t.Nodes[0], Source: "slurm"}
	return n.Complete(lookup, "SLURM_JOB_ID")
}

// TasksPrinting is how many of the step's tasks print to its output at once: the step's task
// count (SLURM_STEP_NUM_TASKS); without it, the job's (SLURM_NTASKS) only inside a step
// (SLURM_STEP_ID): the batch script of a 4-task job is one process printing. 0 when
// unknown.
func (Scheduler) TasksPrinting(lookup scheduler.Lookup) int {
	n := func(v string) (int, bool) {
		s, ok := lookup(v)
		if !ok || strings.TrimSpace(s) == "" {
			return 0, false
		}
		i, err := strconv.Atoi(strings.TrimSpace(s))
		return i, err == nil && i >= 0
	}
	if tasks, ok := n("SLURM_STEP_NUM_TASKS"); ok {
		return tasks
	}
	if _, inStep := n("SLURM_STEP_ID"); !inStep {
		return 0
	}
	tasks, _ := n("SLURM_NTASKS")
	return tasks
}

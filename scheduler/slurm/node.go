package slurm

import "github.com/benchctl/benchctl/scheduler"

var _ scheduler.Scheduler = Scheduler{}

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

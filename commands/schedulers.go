package commands

import (
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
	"github.com/benchctl/benchctl/scheduler/local"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// schedulers are the batch systems benchctl knows, in the order they are detected: local,
// which claims every environment, last. A new scheduler is one line here.
func schedulers() []scheduler.Scheduler {
	return []scheduler.Scheduler{slurm.Scheduler{}, kubernetes.Scheduler{}, local.Scheduler{}}
}

// detectNode is this task's node context, from the first scheduler whose job this is.
func detectNode(lookup scheduler.Lookup) (scheduler.Node, error) {
	return scheduler.DetectNode(lookup, schedulers()...)
}

// EpilogNode is the job and node of the scheduler's epilog this process runs in (Slurm's:
// SLURM_JOB_ID, SLURMD_NODENAME), which cleanup uses when --job and --host are not given.
func EpilogNode(lookup scheduler.Lookup) (job, host string, ok bool) {
	return scheduler.EpilogNode(lookup, schedulers()...)
}

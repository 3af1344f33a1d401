package commands

import (
	"context"
	"log/slog"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// collectScheduler is Slurm as collect asks it: what Slurm could not say is logged here, on
// one line (slurm.Brief), and collect goes on from the job folder as if Slurm had no word
// on the job.
type collectScheduler struct{ slurm.Scheduler }

// newCollectScheduler is Slurm (or, for its jobs, Kubernetes) for collect, or nil with
// --no-slurm (the files decide).
func newCollectScheduler(noSlurm bool, cluster kubernetes.Cluster) jobdir.Scheduler {
	if noSlurm {
		return nil
	}
	return scheduler.Any(collectScheduler{}, kubernetes.Scheduler{Cluster: &cluster})
}

// JobState asks Slurm about the job. When slurmctld does not answer, one warning says so,
// with what sacct said; when only the accounting cannot say (off or down), the warning
// says what that means for nodes still saying running.
func (c collectScheduler) JobState(ctx context.Context, id string) (jobdir.SchedulerState, error) {
	var unsure *slurm.JobState
	s := c.Scheduler
	s.Unsure = func(_ string, st slurm.JobState) { unsure = &st }
	st, err := s.JobState(ctx, id)
	switch {
	case err != nil:
		var detail []string
		if unsure != nil {
			detail = append(detail, unsure.Detail)
		}
		slog.Warn("Slurm did not answer about job " + id + " (" + slurm.Brief(err, detail...) + "): collect went on from the job folder; --no-slurm does not ask")
		return jobdir.SchedulerState{}, nil
	case unsure != nil:
		slog.Warn(accountingNote(*unsure, id) + " (" + slurm.Brief(nil, unsure.Detail) + ")")
	}
	return st, nil
}

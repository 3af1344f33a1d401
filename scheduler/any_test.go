package scheduler_test

import (
	"context"
	"errors"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/local"
)

// says is a scheduler that knows the jobs of its map, or fails to be asked.
type says struct {
	local.Scheduler
	name  string
	jobs  map[string]string
	err   error
	waits *int
}

func (s says) JobState(_ context.Context, id string) (jobdir.SchedulerState, error) {
	if s.err != nil {
		return jobdir.SchedulerState{}, s.err
	}
	if st, ok := s.jobs[id]; ok {
		return jobdir.SchedulerState{Known: true, State: st, Scheduler: s.name}, nil
	}
	return jobdir.SchedulerState{}, nil
}

func (s says) Wait(ctx context.Context, id string, tick func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error) {
	*s.waits++
	return s.JobState(ctx, id)
}

// The scheduler that knows a job answers for it, whichever comes first; a job no one
// knows is unknown, with the error of one that could not be asked.
func TestAnyAsksWhoKnowsTheJob(t *testing.T) {
	var waits int
	down := says{name: "Slurm", err: errors.New("slurmctld is down"), waits: &waits}
	k8s := says{name: "Kubernetes", jobs: map[string]string{"j-1": "RUNNING"}, waits: &waits}
	asked := scheduler.Any(down, k8s, local.Scheduler{})
	st, err := asked.JobState(context.Background(), "j-1")
	if err != nil || st.Scheduler != "Kubernetes" || st.State != "RUNNING" {
		t.Errorf("%+v %v", st, err)
	}
	st, err = asked.JobState(context.Background(), "j-2")
	if err == nil || st.Known {
		t.Errorf("an unknown job with a scheduler down: %+v %v", st, err)
	}
	if st, err := asked.Wait(context.Background(), "j-1", nil); err != nil || waits != 1 || st.State != "RUNNING" {
		t.Errorf("wait: %+v %v, %d waits", st, err, waits)
	}
	if st, err := scheduler.Any(local.Scheduler{}).Wait(context.Background(), "j-3", nil); err != nil || st.Known {
		t.Errorf("wait on no scheduler that knows it: %+v %v", st, err)
	}
}

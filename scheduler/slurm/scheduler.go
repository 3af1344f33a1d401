package slurm

import (
	"context"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// Scheduler is Slurm as jobdir.Scheduler: how a job stands (QueryJobState: squeue,
// scontrol, then sacct) and waiting for its end (Wait).
type Scheduler struct {
	Run Commander // ExecCommander{} when nil
	// Timeout bounds each JobState question (DefaultQueryTimeout when zero); Wait is
	// bounded by its ctx alone.
	Timeout time.Duration
	// Unsure, when set, is told of a job that Slurm has forgotten and whose accounting
	// cannot say how it ended (st.Accounting says why, st.Detail what sacct said), so
	// that the caller can say so; the state is then unknown.
	Unsure func(jobID string, st JobState)
}

var (
	_ jobdir.Scheduler    = Scheduler{}
	_ scheduler.Scheduler = Scheduler{}
	_ scheduler.Teller    = Scheduler{}
	_ scheduler.Epilog    = Scheduler{}
)

// DefaultQueryTimeout bounds one question to Slurm when Scheduler.Timeout is zero.
const DefaultQueryTimeout = 15 * time.Second

// JobState asks Slurm about a job (QueryJobState), within the Timeout.
func (s Scheduler) JobState(ctx context.Context, jobID string) (jobdir.SchedulerState, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := QueryJobState(ctx, s.commander(), jobID)
	if st.Accounting != "" && s.Unsure != nil {
		s.Unsure(jobID, st)
	}
	return st.scheduler(), err
}

// Wait follows a job until Slurm no longer lists it as active (the package's Wait).
func (s Scheduler) Wait(ctx context.Context, jobID string, tick func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error) {
	st, err := Wait(ctx, s.commander(), jobID, func(st JobState, err error) {
		if tick != nil {
			tick(st.scheduler(), err)
		}
	})
	return st.scheduler(), err
}

func (s Scheduler) commander() Commander {
	if s.Run == nil {
		return ExecCommander{}
	}
	return s.Run
}

// scheduler is the state as jobdir.SchedulerState.
func (s JobState) scheduler() jobdir.SchedulerState {
	st := jobdir.SchedulerState{Known: s.Known, State: s.State, Active: s.Active(), Source: s.Source}
	if s.Known {
		st.Scheduler = "Slurm"
	}
	return st
}

// Title is Slurm's name for a person.
func (Scheduler) Title() string { return "Slurm" }

// Tell is what asking Slurm said, on one line (Brief).
func (Scheduler) Tell(err error) string { return Brief(err) }

// EpilogNode is the job and node of a Slurm epilog (SLURM_JOB_ID, SLURMD_NODENAME): Slurm
// runs it as root on every node of a job when the job ends.
func (Scheduler) EpilogNode(lookup scheduler.Lookup) (job, host string, ok bool) {
	job, _ = lookup("SLURM_JOB_ID")
	host, _ = lookup("SLURMD_NODENAME")
	return job, host, job != ""
}

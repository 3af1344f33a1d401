package jobdir

import "context"

// Scheduler is the batch system as the job folder's readers ask it: how a job stands, and
// when it has ended. Slurm implements it (slurm.Scheduler); `benchctl jobs` (Overview),
// `submit --wait` (Follow) and collect (results.Collect) ask it, and
// RemoveSubmittedWhenEnded decides from its answer. Tests fake it.
type Scheduler interface {
	// JobState says what the scheduler knows of a job. A job it does not know (not one
	// of its ids, forgotten, or no scheduler on this machine) is the zero SchedulerState
	// and no error; an error means it could not be asked, and the caller decides from
	// the status files.
	JobState(ctx context.Context, jobID string) (SchedulerState, error)
	// Wait blocks until the scheduler no longer lists the job as active and returns its
	// last state; tick is called on every poll with the state and any error asking (the
	// caller shows progress from it). The error is ctx's when it ends first.
	Wait(ctx context.Context, jobID string, tick func(SchedulerState, error)) (SchedulerState, error)
}

// SchedulerState is what the batch system says about a job, when it knows the job.
type SchedulerState struct {
	Known  bool   // the scheduler knows the job (false: no Slurm, or the job was purged)
	State  string // e.g. RUNNING, COMPLETED
	Active bool   // pending, running, completing, suspended, ...
	Source string // where the state comes from, e.g. squeue, scontrol or sacct
	// Scheduler names the scheduler that says it, as its users call it ("Slurm"); "" when
	// no scheduler knows the job.
	Scheduler string `json:"scheduler,omitempty"`
}

// Says is who says the state, for messages: "Slurm says", or "the scheduler says".
func (s SchedulerState) Says() string {
	if s.Scheduler == "" {
		return "the scheduler says"
	}
	return s.Scheduler + " says"
}

// Ended reports whether the scheduler says the job has ended: it knows the job, and the
// job is not active (a requeued job is pending again: not ended).
func (s SchedulerState) Ended() bool { return s.Known && !s.Active }

// RemoveSubmittedWhenEnded is the one rule for a job's submission files (its secret above
// all) at its end: they are removed once the scheduler says the job has ended (st.Ended),
// and kept while it is active (a requeued job reads its secret again) or when the
// scheduler cannot say (PruneSubmitted removes them later). It reports whether it
// removed them; the error is RemoveSubmitted's.
func (l Layout) RemoveSubmittedWhenEnded(jobID string, st SchedulerState) (bool, error) {
	if !st.Ended() {
		return false, nil
	}
	return true, l.RemoveSubmitted(jobID)
}

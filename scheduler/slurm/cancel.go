package slurm

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os/exec"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/scheduler"
)

var _ scheduler.Canceller = Scheduler{}

// Cancel ends a Slurm job with scancel (its tasks get SIGTERM, then SIGKILL after Slurm's
// KillWait). An id that is not a Slurm job id is not Slurm's; a job Slurm does not know is
// an input error; a job that has already ended is no error.
func (s Scheduler) Cancel(ctx context.Context, id string) (bool, error) {
	if !validJobID(id) {
		return false, nil
	}
	// scancel says nothing, and exits 0, of a job Slurm never had: asked first.
	st, err := s.JobState(ctx, id)
	switch {
	case err == nil && !st.Known:
		return true, exitcode.Usagef("list the jobs with 'benchctl jobs'", "Slurm has no job %s", id)
	case err == nil && !st.Active:
		slog.Info("the job has ended already", "job", id, "state", st.State)
		return true, nil
	}
	_, err = s.commander().Output(ctx, "scancel", id)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && bytes.Contains(bytes.ToLower(ee.Stderr), []byte("already completing or completed")):
		return true, nil
	case unknownJob(err):
		return true, exitcode.Usagef("list the jobs with 'benchctl jobs'", "Slurm has no job %s", id)
	case notFound(err):
		return true, exitcode.Usagef("run it where Slurm's commands are (the login node)", "cancelling job %s: scancel is not on this machine's PATH", id)
	}
	return true, errors.New("scancel " + id + ": " + Brief(errText(err)))
}

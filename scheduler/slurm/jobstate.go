package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Commander runs a command (no shell) and returns its stdout; on a non-zero exit the error
// is an *exec.ExitError whose Stderr holds the command's stderr. Tests fake it.
type Commander interface {
	Output(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ExecCommander runs commands with os/exec.
type ExecCommander struct{}

var _ Commander = ExecCommander{}

// Output runs name with args and returns its stdout.
func (ExecCommander) Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).Output()
}

// JobState is what Slurm says about a job.
type JobState struct {
	Known  bool   // Slurm knows the job; false when Slurm is absent or has forgotten it
	State  string // e.g. PENDING, RUNNING, COMPLETED (the first word of Slurm's state)
	Source string // squeue, scontrol or sacct
	// Accounting is set when squeue and scontrol do not know the job and sacct cannot say
	// either: AccountingOff or AccountingDown. Nothing then tells whether the job ended.
	// Detail is what sacct said ("sacct: Slurm accounting storage is disabled").
	Accounting string
	Detail     string
}

// Active reports whether the job may still run or is running: every state but the final
// ones (COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE,
// OUT_OF_MEMORY, SPECIAL_EXIT, REVOKED).
func (s JobState) Active() bool {
	if !s.Known {
		return false
	}
	switch s.State {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
		"DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED":
		return false
	}
	return true
}

// QueryJobState asks Slurm about a job: `squeue -h -j ID -o %T` first, then
// `scontrol show job -o ID` (which also knows jobs that ended less than MinJobAge ago),
// then `sacct -j ID -n -X -P -o State` (the accounting storage, which knows jobs long after
// slurmctld has forgotten them). All are run without a shell. A job id that is not a Slurm
// job id, missing commands, and a job Slurm does not know give an unknown state and no
// error; so does accounting that is off or does not answer, with Accounting saying which.
// Other failures (slurmctld down and no answer from sacct, output that is not a job state)
// give an unknown state and an error to log, so that the caller can decide by other means.
// For an array job, any active task makes the job active.
func QueryJobState(ctx context.Context, run Commander, jobID string) (JobState, error) {
	if !validJobID(jobID) {
		return JobState{}, nil
	}
	st, err := queryController(ctx, run, jobID)
	if st.Known || ctx.Err() != nil {
		return st, err
	}
	if errors.Is(err, errNoSlurm) {
		return JobState{}, nil // no squeue and no scontrol: not a Slurm machine
	}
	acct, aerr := queryAccounting(ctx, run, jobID)
	if acct.Known {
		return acct, nil // slurmctld may be down, but the accounting knows how the job ended
	}
	return acct, errors.Join(err, aerr)
}

// errNoSlurm is neither squeue nor scontrol being there.
var errNoSlurm = errors.New("no squeue and no scontrol")

// queryController asks slurmctld, through squeue and then scontrol.
func queryController(ctx context.Context, run Commander, jobID string) (JobState, error) {
	var sqErr error
	out, err := run.Output(ctx, "squeue", "-h", "-j", jobID, "-o", "%T")
	switch {
	case err == nil:
		if st, ok := pickState(strings.Fields(string(out))); ok {
			return JobState{Known: true, State: st, Source: "squeue"}, nil
		}
	case !notFound(err) && !unknownJob(err):
		sqErr = fmt.Errorf("squeue: %w", errText(err))
	}
	sqMissing := notFound(err)
	out, err = run.Output(ctx, "scontrol", "show", "job", "-o", jobID)
	switch {
	case err == nil:
		var states []string
		for _, line := range strings.Split(string(out), "\n") {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "JobState="); ok {
					states = append(states, v)
				}
			}
		}
		if st, ok := pickState(states); ok {
			return JobState{Known: true, State: st, Source: "scontrol"}, nil
		}
		return JobState{}, sqErr
	case notFound(err) && sqMissing:
		return JobState{}, errNoSlurm
	case notFound(err) || unknownJob(err):
		return JobState{}, sqErr
	}
	return JobState{}, errors.Join(sqErr, fmt.Errorf("scontrol: %w", errText(err)))
}

// pickState returns an active state if any task has one, else the first state.
func pickState(states []string) (string, bool) {
	first := ""
	for _, s := range states {
		s, _, _ = strings.Cut(strings.TrimSpace(s), "+") // "CANCELLED+" and the like
		s, _, _ = strings.Cut(s, " ")
		if s == "" {
			continue
		}
		if first == "" {
			first = s
		}
		if (JobState{Known: true, State: s}).Active() {
			return s, true
		}
	}
	return first, first != ""
}

// validJobID accepts Slurm job ids only (123, 123_4, 123+1), so that nothing that looks
// like an option ever reaches squeue or scontrol.
func validJobID(id string) bool {
	head, tail, found := strings.Cut(id, "_")
	if !found {
		head, tail, found = strings.Cut(id, "+")
	}
	return digits(head) && (!found || digits(tail))
}

func digits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func notFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }

// unknownJob recognises "slurm_load_jobs error: Invalid job id specified".
func unknownJob(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && bytes.Contains(bytes.ToLower(ee.Stderr), []byte("invalid job id"))
}

// errText adds a command's stderr to its error.
func errText(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(bytes.TrimSpace(ee.Stderr)) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}

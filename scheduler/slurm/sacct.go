package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Why sacct could not say whether a job ended (JobState.Accounting).
const (
	// AccountingOff: Slurm keeps no accounting ("Slurm accounting storage is disabled"),
	// or there is no sacct command.
	AccountingOff = "Slurm accounting is off"
	// AccountingDown: accounting is configured, but sacct cannot reach slurmdbd.
	AccountingDown = "Slurm accounting does not answer"
)

// queryAccounting asks `sacct -j ID -n -X -P -o State` (no shell) about a job that squeue
// and scontrol no longer know. sacct reads the accounting storage through slurmdbd, so it
// knows jobs long after slurmctld has forgotten them (MinJobAge), when accounting is on.
// -X leaves out steps; an array job gives one line per task. Accounting that is off or
// unreachable gives an unknown state with Accounting set and no error; output that is not
// a list of Slurm job states is an error.
func queryAccounting(ctx context.Context, run Commander, jobID string) (JobState, error) {
	out, err := run.Output(ctx, "sacct", "-j", jobID, "-n", "-X", "-P", "-o", "State")
	if err != nil {
		stderr := exitStderr(err)
		switch {
		case notFound(err):
			return JobState{Accounting: AccountingOff, Detail: "no sacct command"}, nil
		case accountingDisabled(stderr) || accountingDisabled(out):
			return JobState{Accounting: AccountingOff, Detail: "sacct: " + lastLine(stderr, out)}, nil
		case slurmdbdUnreachable(stderr):
			return JobState{Accounting: AccountingDown, Detail: "sacct: " + lastLine(stderr, nil)}, nil
		}
		if len(bytes.TrimSpace(stderr)) > 0 {
			return JobState{}, fmt.Errorf("sacct: %w: %s", err, lastLine(stderr, nil))
		}
		return JobState{}, fmt.Errorf("sacct: %w", err)
	}
	if accountingDisabled(out) { // older sacct printed it on stdout
		return JobState{Accounting: AccountingOff, Detail: "sacct: " + lastLine(out, nil)}, nil
	}
	var states []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		word, _, _ := strings.Cut(line, " ") // "CANCELLED by 0"
		if !slurmStates[strings.TrimSuffix(word, "+")] {
			return JobState{}, fmt.Errorf("sacct: unexpected output %s", quoteShort(line))
		}
		states = append(states, word)
	}
	if st, ok := pickState(states); ok {
		return JobState{Known: true, State: st, Source: "sacct"}, nil
	}
	return JobState{}, nil // accounting has no record of the job
}

// slurmStates are the job states sacct prints (Slurm 22.05's job_state_string).
var slurmStates = map[string]bool{
	"PENDING": true, "RUNNING": true, "SUSPENDED": true, "COMPLETED": true, "CANCELLED": true,
	"FAILED": true, "TIMEOUT": true, "NODE_FAIL": true, "PREEMPTED": true, "BOOT_FAIL": true,
	"DEADLINE": true, "OUT_OF_MEMORY": true, "REQUEUED": true, "REQUEUE_FED": true,
	"REQUEUE_HOLD": true, "RESIZING": true, "REVOKED": true, "SPECIAL_EXIT": true,
	"COMPLETING": true, "CONFIGURING": true, "SIGNALING": true, "STAGE_OUT": true,
	"STOPPED": true, "RESV_DEL_HOLD": true,
}

// accountingDisabled recognises sacct's "Slurm accounting storage is disabled" (22.05; older
// releases wrote "SLURM accounting storage is disabled").
func accountingDisabled(b []byte) bool {
	return bytes.Contains(bytes.ToLower(b), []byte("accounting storage is disabled"))
}

// slurmdbdUnreachable recognises sacct failing to reach slurmdbd, e.g. (22.05)
// "sacct: error: Problem talking to the database: Connection refused" after
// "slurm_persist_conn_open_without_init: failed to open persistent connection to host:...".
func slurmdbdUnreachable(stderr []byte) bool {
	s := bytes.ToLower(stderr)
	return bytes.Contains(s, []byte("problem talking to the database")) ||
		bytes.Contains(s, []byte("persistent connection")) ||
		bytes.Contains(s, []byte("unable to contact slurmdbd"))
}

func exitStderr(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

// lastLine returns the last line of a, else of b, without "sacct: " and shortened: sacct's
// conclusion comes after the connection errors that led to it.
func lastLine(a, b []byte) string {
	for _, src := range [][]byte{a, b} {
		lines := strings.Split(strings.TrimSpace(string(src)), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			l = strings.TrimPrefix(l, "sacct: ")
			return shorten(l)
		}
	}
	return "no message"
}

// quoteShort quotes s, cut to 80 bytes: a 6,000-character line must not become the message.
func quoteShort(s string) string {
	if len(s) <= 80 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:80], len(s))
}

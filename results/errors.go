package results

import (
	"fmt"
	"strings"

	"github.com/benchctl/benchctl/internal/textsafe"
)

// RunningError refuses to collect a job that is still running (without --partial).
type RunningError struct {
	JobID   string
	Attempt int
	Reason  string // e.g. "Slurm says RUNNING" or "2 nodes have not finished: 0-n1, 1-n2"
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("job %s (attempt %d) is still running: %s; collect it when it has ended, or pass --partial to collect what is there now",
		textsafe.Line(e.JobID), e.Attempt, textsafe.Line(e.Reason))
}

// FailedError says that a collected job has failures: a benchmark without a result, a
// failed node, or a FAILURE row. Exit code 3, as madengine's run failures. Its message
// quotes what nodes and containers wrote (a log line the log scan matched, a host name)
// with their control characters escaped (textsafe.Line); Failed keeps them as they are.
type FailedError struct {
	JobID  string
	Failed []string // "benchmark: reason" or "node 1-n2: reason"
	// Unfinished: nothing failed, but nodes are still running (a --partial collection).
	Unfinished bool
}

func (e *FailedError) Error() string {
	const show = 5
	msg := textsafe.Line(strings.Join(e.Failed[:min(show, len(e.Failed))], "; "))
	if len(e.Failed) > show {
		msg += fmt.Sprintf("; and %d more (see summary.json)", len(e.Failed)-show)
	}
	if e.Unfinished {
		return fmt.Sprintf("job %s has not finished: %s", textsafe.Line(e.JobID), msg)
	}
	return fmt.Sprintf("job %s has failures: %s", textsafe.Line(e.JobID), msg)
}

// ExitCode is 3: a benchmark failed.
func (e *FailedError) ExitCode() int { return 3 }

// RegressionError is a comparison where at least one row regressed past the threshold.
type RegressionError struct {
	Regressed []string // "model metric: -12.3 %"
}

func (e *RegressionError) Error() string {
	const show = 5
	msg := textsafe.Line(strings.Join(e.Regressed[:min(show, len(e.Regressed))], "; "))
	if len(e.Regressed) > show {
		msg += fmt.Sprintf("; and %d more", len(e.Regressed)-show)
	}
	return fmt.Sprintf("%d rows regressed: %s", len(e.Regressed), msg)
}

// ExitCode is 3: a regression fails the run, like a failed benchmark.
func (e *RegressionError) ExitCode() int { return 3 }

// InputError is a file that cannot be used as input (a CSV to compare): exit 4.
type InputError struct {
	Path string
	Err  error
}

// Error quotes the file (a column name, a cell) with its control characters escaped.
func (e *InputError) Error() string      { return textsafe.Text(e.Path + ": " + e.Err.Error()) }
func (e *InputError) Unwrap() error      { return e.Err }
func (e *InputError) InvalidInput() bool { return true }

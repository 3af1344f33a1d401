package exitcode

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// SignalError is why a command was cancelled: a signal (SIGINT, SIGTERM) reached the
// process. It is the cause (context.Cause) of the command's context, and gives the shell's
// exit code for a signal, 128+n: 130 for SIGINT, 143 for SIGTERM.
//
// It is a cancellation: errors.Is(err, context.Canceled) holds, so that code telling a
// cancellation apart from another cause (the runner's job-channel verdicts) sees one.
type SignalError struct {
	Signal syscall.Signal
}

func (e *SignalError) Error() string {
	return fmt.Sprintf("interrupted by %s", signalName(e.Signal))
}

// ExitCode is 128 plus the signal's number.
func (e *SignalError) ExitCode() int { return 128 + int(e.Signal) }

// Unwrap makes a SignalError a context.Canceled.
func (e *SignalError) Unwrap() error { return context.Canceled }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// OfContext is Of for an error a command returned under ctx: when ctx was cancelled by a
// signal (its cause is a *SignalError) and err is that cancellation (errors.Is
// context.Canceled) without a code of its own, the code is the signal's (130, 143). An
// error with its own code keeps it: a run cancelled by scancel is a run failure (3), as
// madengine and Slurm's users expect.
func OfContext(ctx context.Context, err error) int {
	if se := Interrupted(ctx, err); se != nil {
		return se.ExitCode()
	}
	return Of(err)
}

// Interrupted returns the signal that ended the command whose error is err, or nil when
// err is not (only) that cancellation.
func Interrupted(ctx context.Context, err error) *SignalError {
	if err == nil || !errors.Is(err, context.Canceled) {
		return nil
	}
	var se *SignalError
	if errors.As(err, &se) {
		return se
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return nil
	}
	if errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}

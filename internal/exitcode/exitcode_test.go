package exitcode

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

type coded int

func (c coded) Error() string { return "coded" }
func (c coded) ExitCode() int { return int(c) }

type invalid bool

func (i invalid) Error() string      { return "invalid" }
func (i invalid) InvalidInput() bool { return bool(i) }

func TestOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, OK},
		{errors.New("x"), Failure},
		{coded(2), Build},
		{fmt.Errorf("wrapped: %w", coded(3)), Run},
		{invalid(true), Invalid},
		{fmt.Errorf("loading m.yaml: %w", invalid(true)), Invalid},
		{invalid(false), Failure},
	} {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestSignalCodes(t *testing.T) {
	sigint := &SignalError{Signal: syscall.SIGINT}
	sigterm := &SignalError{Signal: syscall.SIGTERM}
	cancelled := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"SIGINT", cancelled(sigint), fmt.Errorf("validating m.yaml: %w", context.Canceled), 130},
		{"SIGTERM", cancelled(sigterm), fmt.Errorf("hashing: %w", context.Canceled), 143},
		{"the cause itself", context.Background(), fmt.Errorf("reading: %w", sigterm), 143},
		{"own code kept", cancelled(sigterm), fmt.Errorf("%w: %w", coded(3), context.Canceled), 3},
		{"not a cancellation", cancelled(sigterm), coded(3), 3},
		{"plain cancel", cancelled(context.Canceled), context.Canceled, Failure},
		{"no signal", context.Background(), errors.New("x"), Failure},
	} {
		if got := OfContext(c.ctx, c.err); got != c.want {
			t.Errorf("%s: OfContext(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
	if !errors.Is(sigterm, context.Canceled) || sigterm.Error() != "interrupted by SIGTERM" {
		t.Errorf("%v is not a cancellation", sigterm)
	}
}

// Bad command-line input is exit 4 with its hint, wrapped or not.
func TestUsagef(t *testing.T) {
	err := fmt.Errorf("flag: %w", Usagef("give --nodes 2", "--nodes %d is not a node count", -1))
	if Of(err) != Invalid {
		t.Fatalf("exit %d, want %d", Of(err), Invalid)
	}
	var h interface{ Hint() string }
	if !errors.As(err, &h) || h.Hint() != "give --nodes 2" || err.Error() != "flag: --nodes -1 is not a node count" {
		t.Fatalf("%v", err)
	}
}

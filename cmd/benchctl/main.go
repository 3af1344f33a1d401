// Command benchctl is a declarative multi-node benchmark harness for GPU clusters.
// This package is cobra wiring only: flags into option structs, then a call into a package.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchctl/benchctl/internal/timeline"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/runner"
)

func main() {
	// A signal cancels ctx with itself as the cause: a command it stops exits 128+n (130 for
	// SIGINT, 143 for SIGTERM); run keeps its own code (see exitcode.OfContext).
	ctx, cancel := context.WithCancelCause(context.Background())
	force := make(chan struct{})
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// First signal: stop gracefully (diagnostics, stop, remove, status) within Slurm's
		// KillWait. Second: remove the containers now. Third: exit at once.
		s := <-sigs
		cancel(signalError(s))
		<-sigs
		fmt.Fprintf(os.Stderr, "benchctl: %v again: removing containers now, without diagnostics (once more to exit at once)\n", s)
		close(force)
		s = <-sigs
		fmt.Fprintln(os.Stderr, "benchctl: exiting at once; containers and status files may be left (benchctl cleanup --job ID removes and records them)")
		os.Exit(signalError(s).ExitCode())
	}()
	timeline.Mark("main")
	code := Execute(runner.WithForce(ctx, force), os.Args[1:], iostreams.System())
	_ = timeline.Write() // BENCHCTL_TIMELINE's file: where the time went (bench/run, bench/process)
	signal.Stop(sigs)
	cancel(nil)
	os.Exit(code)
}

// signalError is the cause a signal gives the command's context.
func signalError(s os.Signal) *exitcode.SignalError {
	n, ok := s.(syscall.Signal)
	if !ok {
		n = syscall.SIGINT // os.Interrupt is a syscall.Signal on every platform benchctl runs on
	}
	return &exitcode.SignalError{Signal: n}
}

// Command benchctl is a declarative multi-node benchmark harness for GPU clusters.
// This package is cobra wiring only: flags into option structs, then a call into a package.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchctl/benchctl/runner"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	force := make(chan struct{})
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// First signal: stop gracefully (diagnostics, stop, remove, status) within Slurm's
		// KillWait. Second: remove the containers now. Third: exit at once.
		s := <-sigs
		cancel()
		<-sigs
		fmt.Fprintf(os.Stderr, "benchctl: %v again: removing containers now, without diagnostics (once more to exit at once)\n", s)
		close(force)
		<-sigs
		fmt.Fprintln(os.Stderr, "benchctl: exiting at once; containers and status files may be left (benchctl cleanup --job ID removes and records them)")
		os.Exit(130)
	}()
	code := Execute(runner.WithForce(ctx, force), os.Args[1:], systemStreams())
	signal.Stop(sigs)
	cancel()
	os.Exit(code)
}

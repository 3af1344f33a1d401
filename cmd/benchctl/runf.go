package main

import (
	"context"

	"github.com/benchctl/benchctl/internal/iostreams"
)

// runF is a command's work (commands.Build, commands.Collect, …): each command's
// constructor takes one, nil for the real one, so that a test can see the options a command
// line becomes without running anything (cli/cli's NewCmdX(f, runF)). The command parses
// and checks its flags and arguments into opts, then calls it.
type runF[O any] func(ctx context.Context, io iostreams.Streams, opts O) error

// or is f, or the real work when f is nil.
func (f runF[O]) or(real runF[O]) runF[O] {
	if f != nil {
		return f
	}
	return real
}

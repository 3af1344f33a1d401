package commands

import (
	"io"

	"github.com/benchctl/benchctl/internal/jsonout"
	"github.com/benchctl/benchctl/scheduler"
)

// writeJSON prints v as -o json does (jsonout.Write): indented, every empty list [].
func writeJSON(w io.Writer, v any) error { return jsonout.Write(w, v) }

// severalNodesPrint reports whether this benchctl is one of several tasks printing to one
// output at once (srun -N 4 benchctl doctor -o json): each then prints its JSON document on
// one line, so that the interleaved output is one document per line. The schedulers say
// (scheduler.SeveralPrint: Slurm's step task count).
func severalNodesPrint(lookup func(string) (string, bool)) bool {
	return scheduler.SeveralPrint(lookup, schedulers()...)
}

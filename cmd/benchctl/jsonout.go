package main

import (
	"io"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/jsonout"
)

// writeJSON prints v as -o json does (jsonout.Write): indented, every empty list [].
func writeJSON(w io.Writer, v any) error { return jsonout.Write(w, v) }

// severalNodesPrint reports whether this benchctl is one of several tasks of a Slurm step
// printing at once (srun -N 4 benchctl doctor -o json): each then prints its JSON document
// on one line, so that the interleaved output is one document per line. The step's task
// count decides (SLURM_STEP_NUM_TASKS); without it, the job's (SLURM_NTASKS) only inside a
// step (SLURM_STEP_ID): a batch script of a 4-task job is one process printing.
func severalNodesPrint(lookup func(string) (string, bool)) bool {
	n := func(v string) (int, bool) {
		s, ok := lookup(v)
		if !ok || strings.TrimSpace(s) == "" {
			return 0, false
		}
		i, err := strconv.Atoi(strings.TrimSpace(s))
		return i, err == nil
	}
	if tasks, ok := n("SLURM_STEP_NUM_TASKS"); ok {
		return tasks > 1
	}
	if _, inStep := n("SLURM_STEP_ID"); !inStep {
		return false
	}
	tasks, _ := n("SLURM_NTASKS")
	return tasks > 1
}

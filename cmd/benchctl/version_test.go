package main

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/commands"
)

// version -o json is indented, as every -o json is (docs/cli-conventions.md), in a terminal
// and in a pipe; in a Slurm step of several tasks (srun -N 3 benchctl version -o json) it is
// one line per node, so that the nodes' documents do not interleave.
func TestVersionJSONIsIndented(t *testing.T) {
	t.Setenv("SLURM_STEP_NUM_TASKS", "")
	t.Setenv("SLURM_NTASKS", "")
	b := commands.CurrentBuild()
	indented := "{\n  \"client\": {\n    \"version\": \"" + b.Version + "\",\n    \"commit\": \"" + b.Commit + "\","
	for _, tty := range []bool{true, false} {
		code, out, errs := runMode(t, tty, "version", "--no-engine", "-o", "json")
		if code != 0 || errs != "" || !strings.HasPrefix(out, indented) || !strings.HasSuffix(out, "\n  }\n}\n") {
			t.Errorf("tty %v: exit %d, stderr %q, stdout:\n%s", tty, code, errs, out)
		}
	}
	for _, n := range []string{"1", "x"} {
		t.Setenv("SLURM_STEP_NUM_TASKS", n)
		if _, out, _ := runMode(t, false, "version", "--no-engine", "-o", "json"); !strings.HasPrefix(out, indented) {
			t.Errorf("SLURM_STEP_NUM_TASKS=%s: not indented:\n%s", n, out)
		}
	}
	t.Setenv("SLURM_STEP_NUM_TASKS", "3")
	code, out, _ := runMode(t, false, "version", "--no-engine", "-o", "json")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, `{"client":{"version":`) {
		t.Errorf("srun -N 3: exit %d, want one line:\n%s", code, out)
	}
}

package tests

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/tests/testbed"
)

// `srun benchctl doctor` on every node of the testbed passes, and each node sees the
// others' markers in the shared directory.
func TestDoctorUnderSrun(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "srun", "-N", strconv.Itoa(len(tb.Nodes)), "--ntasks-per-node=1", "-p", tb.Partition,
		tb.Benchctl(t), "doctor", "--shared-dir", shared, "--manifest", repoPath(t, "models/allreduce/benchmark.yaml"))
	cmd.Env = tb.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("doctor failed: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "ok    same shared directory on every node"); n != len(tb.Nodes) {
		t.Fatalf("%d nodes saw the same shared directory:\n%s", n, out)
	}
	if strings.Contains(string(out), "FAIL") || strings.Count(string(out), "ok    slurm environment") != len(tb.Nodes) {
		t.Fatalf("unexpected output:\n%s", out)
	}
}

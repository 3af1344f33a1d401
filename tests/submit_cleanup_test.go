package tests

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// A job submitted with benchctl submit whose rank 1 benchctl is SIGKILLed (the OOM
// killer, say): the script's cleanup step, run on every node after the run, records rank
// 1's end on its own node (lost, not running forever), removes the container it left on
// its engine, and the job's exit code is still the run's.
func TestSubmitCleanupRecordsAKilledRank(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	n := len(tb.Nodes)
	mf := manifestWith(t, "submitkill", []string{"/dummy", "--rows", "1", "--sleep", "600s"}, "", "job: {heartbeat: 1s}\n")
	out, errs, code := submit(t, tb, "--manifest", mf, "--nodes", itoa(n), "--partition", tb.Partition, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errs)
	}
	id := strings.TrimSpace(strings.Split(out, "\n")[0])
	t.Cleanup(func() { removeJobContainers(t, tb, id) })
	waitAllRunning(t, tb, shared, id)
	killRank(t, id, 1)
	waitJobGone(t, tb, id, 3*time.Minute)

	dirs := nodeDirs(tb)
	s := readStatus(t, shared, id, dirs[1])
	if s.Outcome != runner.OutcomeLost || s.FinishedAt == nil || !strings.Contains(s.Error, "benchctl on "+tb.Nodes[1]+" stopped without recording its end") ||
		!strings.Contains(s.Error, "recorded by benchctl cleanup") {
		t.Errorf("rank 1's status after the job: outcome %s, error %q; want lost, recorded on %s", s.Outcome, s.Error, tb.Nodes[1])
	}
	if len(s.Benchmarks) != 1 || s.Benchmarks[0].Outcome == runner.OutcomeRunning {
		t.Errorf("rank 1's benchmark still says running: %+v", s.Benchmarks)
	}
	for i, d := range dirs {
		if st := readStatus(t, shared, id, d); st.Running() {
			t.Errorf("rank %d still says running", i)
		}
	}
	for _, node := range tb.Nodes {
		if left := jobContainers(t, tb, node, id); len(left) != 0 {
			t.Errorf("%s: containers left after the job: %v", node, left)
		}
	}
	// The job's exit code is the run's (step 0), not the cleanup's (step 1).
	steps := sacctExitCodes(t, tb, id)
	run, job := steps[id+".0"], steps[id+".batch"]
	if run == "" || job == "" || steps[id+".1"] == "" {
		t.Fatalf("sacct steps: %v (want the batch, the run as step 0, the cleanup as step 1)", steps)
	}
	if job == "0:0" {
		t.Errorf("the job exited 0 although rank 1 was killed and the others aborted: %v", steps)
	}
	if steps[id+".1"] != "0:0" {
		t.Errorf("the cleanup step failed: %v", steps)
	}
	t.Logf("exit codes: %v", steps)
}

// sacctExitCodes maps a job's ids (the job, id.batch, id.0, ...) to their ExitCode, once
// the accounting has the job and its batch step ended: squeue can forget a job before the
// accounting records the batch step's end, and a running step's ExitCode reads 0:0.
func sacctExitCodes(t *testing.T, tb *testbed.Testbed, id string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmd := exec.Command("sacct", "-n", "-P", "-j", id, "-o", "JobID,ExitCode,State")
		cmd.Env = tb.Env()
		out, err := cmd.Output()
		got, state := map[string]string{}, map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Split(line, "|"); len(f) >= 3 {
				got[f[0]], state[f[0]] = f[1], f[2]
			}
		}
		if err == nil && got[id+".1"] != "" && sacctEnded(state[id]) && sacctEnded(state[id+".batch"]) {
			return got
		}
		if time.Now().After(deadline) {
			t.Logf("sacct: %v %s", err, out)
			return got
		}
		time.Sleep(time.Second)
	}
}

// sacctEnded says whether a sacct State is a final one (not PENDING, RUNNING, COMPLETING,
// REQUEUED, SUSPENDED or empty). States can carry a suffix ("CANCELLED by 1000").
func sacctEnded(state string) bool {
	switch strings.Fields(state + " ?")[0] {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED":
		return true
	}
	return false
}

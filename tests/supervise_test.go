package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// A collective-like benchmark where rank 2 fails after 2 s while ranks 0 and 1 would
// sleep 10 minutes: every container is gone and every node has ended within 10 s of the
// failure, the job exits 3, ranks 0 and 1 say they were aborted because of rank 2, and
// collect names rank 2.
func TestFailFastAbortsEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := manifestWith(t, "failfast", []string{"/dummy", "--rows", "1", "--sleep", "600s", "--fail-rank", "2", "--fail-after", "2s", "--exit-code", "1"}, "", "")
	id, out, err := runJob(t, tb, mf, shared, true)
	t.Cleanup(func() { removeJobContainers(t, tb, id) })
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	dirs := nodeDirs(tb)
	bad := readStatus(t, shared, id, dirs[2])
	if bad.ExitCode != 3 || len(bad.Benchmarks) != 1 || bad.Benchmarks[0].Outcome != runner.OutcomeFailure || bad.Benchmarks[0].FinishedAt == nil {
		t.Fatalf("rank 2: %+v", bad)
	}
	failedAt := *bad.Benchmarks[0].FinishedAt
	for _, d := range dirs {
		s := readStatus(t, shared, id, d)
		if s.FinishedAt == nil {
			t.Fatalf("%s never recorded its end: %+v", d, s)
		}
		if took := s.FinishedAt.Sub(failedAt); took > 10*time.Second {
			t.Errorf("%s ended %v after rank 2's failure (want within 10 s)", d, took)
		}
		if d == dirs[2] {
			continue
		}
		want := "aborted: rank 2 (" + tb.Nodes[2] + ") failed benchmark dummy: exited with code 1"
		if s.Outcome != runner.OutcomeFailure || s.ExitCode != 3 || !strings.Contains(s.Error, want) {
			t.Errorf("%s: outcome %s exit %d error %q, want %q", d, s.Outcome, s.ExitCode, s.Error, want)
		}
		if b := s.Benchmarks[0]; b.Outcome != runner.OutcomeAborted || !strings.Contains(b.Error, want) || b.Diagnostics == "" {
			t.Errorf("%s benchmark: %+v", d, b)
		}
	}
	for _, n := range tb.Nodes {
		if left := jobContainers(t, tb, n, id); len(left) != 0 {
			t.Errorf("%s: containers left: %v", n, left)
		}
	}
	col := collectOutput(t, tb, shared, id, "--partial")
	if !strings.Contains(col, "rank 2 ("+tb.Nodes[2]+") failed benchmark dummy") {
		t.Errorf("collect does not name rank 2:\n%s", col)
	}
}

// SIGKILL of rank 0's benchctl mid-benchmark: the workers notice within the heartbeat
// timeout (1 s heartbeat: 3 s), stop their containers and exit 1 naming rank 0; rank 0's
// orphaned container stays until something cleans it up.
func TestKilledRankZeroIsLost(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := manifestWith(t, "killzero", []string{"/dummy", "--rows", "1", "--sleep", "600s"}, "", "job: {heartbeat: 1s}\n")
	id, _, _ := runJob(t, tb, mf, shared, false)
	t.Cleanup(func() { removeJobContainers(t, tb, id) })
	waitAllRunning(t, tb, shared, id)
	killedAt := killRank(t, id, 0)
	waitJobGone(t, tb, id, 2*time.Minute)
	dirs := nodeDirs(tb)
	for _, d := range dirs[1:] {
		s := readStatus(t, shared, id, d)
		want := "lost rank 0 (" + tb.Nodes[0] + ") at "
		if s.Outcome != runner.OutcomeFailure || s.ExitCode != 1 || !strings.Contains(s.Error, want) {
			t.Errorf("%s: outcome %s exit %d error %q, want %q", d, s.Outcome, s.ExitCode, s.Error, want)
		}
		if s.FinishedAt == nil {
			t.Errorf("%s never recorded its end", d)
		} else if took := s.FinishedAt.Sub(killedAt); took > 3*time.Second+10*time.Second {
			t.Errorf("%s ended %v after rank 0 was killed", d, took)
		}
		if b := s.Benchmarks[0]; b.Outcome != runner.OutcomeAborted {
			t.Errorf("%s benchmark: %+v", d, b)
		}
	}
	for _, n := range tb.Nodes[1:] {
		if left := jobContainers(t, tb, n, id); len(left) != 0 {
			t.Errorf("%s: containers left: %v", n, left)
		}
	}
	if left := jobContainers(t, tb, tb.Nodes[0], id); len(left) != 1 {
		t.Errorf("%s: want rank 0's orphaned container, got %v", tb.Nodes[0], left)
	}
	if s := readStatus(t, shared, id, dirs[0]); s.Outcome != runner.OutcomeRunning {
		t.Errorf("rank 0's status: %s (killed, it could not record its end)", s.Outcome)
	}
	// Slurm says the job ended: collect calls rank 0 lost, not still running.
	if col := collectOutput(t, tb, shared, id, "--partial"); !strings.Contains(col, "0-"+tb.Nodes[0]+" (lost (last status") {
		t.Errorf("collect does not call rank 0 lost:\n%s", col)
	}
	// benchctl cleanup on n1 (as an epilog would run it) removes the orphan and records the end.
	cmd := exec.Command(tb.Benchctl(t), "cleanup", "--job", id, "--shared-dir", shared, "--host", tb.Nodes[0])
	cmd.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "benchctl-"+id+"-0-r0-dummy") || !strings.Contains(string(out), "removed") {
		t.Fatalf("benchctl cleanup: %v\n%s", err, out)
	}
	if left := jobContainers(t, tb, tb.Nodes[0], id); len(left) != 0 {
		t.Errorf("%s: containers left after cleanup: %v", tb.Nodes[0], left)
	}
	if s := readStatus(t, shared, id, dirs[0]); s.Outcome != "lost" || s.FinishedAt == nil || !strings.Contains(s.Error, "stopped without recording its end") {
		t.Errorf("rank 0's status after cleanup: %+v", s)
	}
}

// SIGKILL of a worker's benchctl: rank 0 aborts the job naming that rank.
func TestKilledWorkerIsLost(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := manifestWith(t, "killworker", []string{"/dummy", "--rows", "1", "--sleep", "600s"}, "", "job: {heartbeat: 1s}\n")
	id, _, _ := runJob(t, tb, mf, shared, false)
	t.Cleanup(func() { removeJobContainers(t, tb, id) })
	waitAllRunning(t, tb, shared, id)
	killedAt := killRank(t, id, 2)
	waitJobGone(t, tb, id, 2*time.Minute)
	dirs := nodeDirs(tb)
	want := "lost rank 2 (" + tb.Nodes[2] + "), last seen "
	for _, d := range dirs[:2] {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeFailure || s.ExitCode != 1 || !strings.Contains(s.Error, want) {
			t.Errorf("%s: outcome %s exit %d error %q, want %q", d, s.Outcome, s.ExitCode, s.Error, want)
		}
		if s.FinishedAt == nil {
			t.Errorf("%s never recorded its end", d)
		} else if took := s.FinishedAt.Sub(killedAt); took > 3*time.Second+10*time.Second {
			t.Errorf("%s ended %v after rank 2 was killed", d, took)
		}
	}
	for _, n := range tb.Nodes[:2] {
		if left := jobContainers(t, tb, n, id); len(left) != 0 {
			t.Errorf("%s: containers left: %v", n, left)
		}
	}
}

// A build that fails with a 10,000-character log line and 300 lines of output: the
// workers end within 5 s with exit 2 and the build's reason.
func TestBuildFailureWithLongLinesStopsEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	ctxDir := testbed.HelloContext(t, t.TempDir(), nil)
	mf := testbed.WriteManifest(t, ctxDir, "buildfailhuge")
	os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY . /\nRUN [\"/hello\", \"failhuge\"]\n"), 0o644)
	id, out, err := runJob(t, tb, mf, shared, true)
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	leader := readStatus(t, shared, id, nodeDirs(tb)[0])
	if leader.ExitCode != 2 || !strings.Contains(leader.Error, "build failed") {
		t.Fatalf("rank 0: %+v", leader)
	}
	var failedAt time.Time
	for _, p := range leader.Phases {
		if p.Name == "image" && p.FinishedAt != nil {
			failedAt = *p.FinishedAt
		}
	}
	for _, d := range nodeDirs(tb)[1:] {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeFailure || s.ExitCode != 2 || !strings.Contains(s.Error, "build failed") {
			t.Errorf("%s: outcome %s exit %d error %.300q", d, s.Outcome, s.ExitCode, s.Error)
		}
		if s.FinishedAt == nil {
			t.Errorf("%s never recorded its end", d)
		} else if took := s.FinishedAt.Sub(failedAt); took > 5*time.Second {
			t.Errorf("%s ended %v after rank 0's build failed", d, took)
		}
	}
	if n := strings.Count(out, "reconnecting"); n > 0 {
		t.Errorf("workers reconnected %d times", n)
	}
}

// scontrol requeue of a running job: attempt 1 starts with no container of attempt 0 left
// on any node, even one that attempt 0 could not clean up (made here by hand: created,
// labelled as attempt 0's, never started).
func TestRequeueStartsClean(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := manifestWith(t, "requeue", []string{"/dummy", "--rows", "1", "--sleep", "600s"}, "", "job: {heartbeat: 1s}\n")
	id, _, _ := runJobWith(t, tb, mf, shared, false, []string{"--requeue", "--open-mode=append"})
	t.Cleanup(func() {
		scancel := exec.Command("scancel", id)
		scancel.Env = tb.Env()
		_ = scancel.Run()
		waitJobGone(t, tb, id, 2*time.Minute)
		removeJobContainers(t, tb, id)
	})
	waitAllRunning(t, tb, shared, id)
	st := readStatus(t, shared, id, nodeDirs(tb)[1])
	eng := tb.Engine(t, tb.Nodes[1])
	left, err := eng.ContainerCreate(context.Background(), client.ContainerCreateOptions{Name: "leftover-" + id,
		Config: &container.Config{Image: st.ImageID, Cmd: []string{"/dummy"},
			Labels: map[string]string{runner.LabelJob: id, runner.LabelAttempt: "0", runner.LabelRank: "1", runner.LabelBenchmark: "dummy"}}})
	if err != nil {
		t.Fatal(err)
	}
	rq := exec.Command("scontrol", "requeue", id)
	rq.Env = tb.Env()
	if out, err := rq.CombinedOutput(); err != nil {
		t.Fatalf("scontrol requeue: %v %s", err, out)
	}
	waitAllRunning(t, tb, shared, id+".1")
	for _, n := range tb.Nodes {
		for _, c := range jobContainers(t, tb, n, id) {
			info, err := tb.Engine(t, n).ContainerInspect(context.Background(), c, client.ContainerInspectOptions{})
			if err != nil {
				continue // removed meanwhile
			}
			if a := info.Container.Config.Labels[runner.LabelAttempt]; a != "1" {
				t.Errorf("%s: a container of attempt %s is left: %s", n, a, info.Container.Name)
			}
		}
	}
	if _, err := eng.ContainerInspect(context.Background(), left.ID, client.ContainerInspectOptions{}); err == nil {
		t.Errorf("the leftover of attempt 0 is still on %s", tb.Nodes[1])
	}
	s := readStatus(t, shared, id+".1", nodeDirs(tb)[1])
	if s.Attempt != 1 {
		t.Errorf("attempt %d", s.Attempt)
	}
}

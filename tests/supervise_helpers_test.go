package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// manifestWith writes a manifest for the dummy example: one benchmark with command, and
// extra YAML lines (job:, onFailure, …) after it.
func manifestWith(t *testing.T, name string, command []string, benchExtra, extra string) string {
	t.Helper()
	cmd, _ := json.Marshal(command)
	body := fmt.Sprintf("name: %s\nimage: {dockerfile: %s}\ngpu: {vendor: none}\nbenchmarks:\n  - {name: dummy, command: %s, timeout: 15m, results: dummy.csv%s}\n%s",
		name, repoPath(t, "models/dummy/Dockerfile"), cmd, benchExtra, extra)
	p := filepath.Join(t.TempDir(), "benchmark.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitAllRunning waits until every node's status says its first benchmark is running.
func waitAllRunning(t *testing.T, tb *testbed.Testbed, shared, id string) {
	t.Helper()
	// The status says running just before the container is created: wait for the container
	// too (a test that kills a rank then knows that it leaves one behind).
	waitEveryNode(t, tb, shared, id, "the benchmark never ran on every node", func(i int, s runner.Status) bool {
		return len(s.Benchmarks) >= 1 && s.Benchmarks[0].Outcome == runner.OutcomeRunning && len(runningContainers(t, tb, tb.Nodes[i], id)) > 0
	})
}

// waitEveryNode waits (3 minutes at most, else fails with why) until ok holds for the
// status.json of every node of job id's first attempt.
func waitEveryNode(t *testing.T, tb *testbed.Testbed, shared, id, why string, ok func(rank int, s runner.Status) bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		done := 0
		for i, d := range nodeDirs(tb) {
			var s runner.Status
			if data, err := os.ReadFile(jobdir.Layout{Shared: shared}.Job(id, 0).NodeNamed(d).Status()); err == nil && json.Unmarshal(data, &s) == nil && ok(i, s) {
				done++
			}
		}
		if done == len(tb.Nodes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitJobGone waits until squeue no longer lists the job.
func waitJobGone(t *testing.T, tb *testbed.Testbed, id string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		sq := exec.Command("squeue", "-h", "-j", id)
		sq.Env = tb.Env()
		out, _ := sq.Output()
		if strings.TrimSpace(string(out)) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job is still there after %s: %s", within, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// jobContainers lists the containers of a job on a node's engine, by label.
// runningContainers lists the ids of node's running containers of the job whose folder is
// dir: the job id, with ".<attempt>" after a requeue (the containers are labelled with the
// job id and the attempt apart).
func runningContainers(t *testing.T, tb *testbed.Testbed, node, dir string) []string {
	t.Helper()
	job, attempt := dir, "0"
	if i := strings.LastIndexByte(dir, '.'); i > 0 {
		if _, err := strconv.Atoi(dir[i+1:]); err == nil {
			job, attempt = dir[:i], dir[i+1:]
		}
	}
	res, err := tb.Engine(t, node).ContainerList(context.Background(), client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", runner.LabelJob+"="+job).Add("label", runner.LabelAttempt+"="+attempt)})
	if err != nil {
		t.Fatalf("%s: listing containers: %v", node, err)
	}
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func jobContainers(t *testing.T, tb *testbed.Testbed, node, id string) []string {
	t.Helper()
	res, err := tb.Engine(t, node).ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", runner.LabelJob+"="+id)})
	if err != nil {
		t.Fatalf("%s: listing containers: %v", node, err)
	}
	var names []string
	for _, c := range res.Items {
		names = append(names, c.ID)
	}
	return names
}

// removeJobContainers force-removes a job's containers on every node (test cleanup).
func removeJobContainers(t *testing.T, tb *testbed.Testbed, id string) {
	for _, n := range tb.Nodes {
		for _, c := range jobContainers(t, tb, n, id) {
			_, _ = tb.Engine(t, n).ContainerRemove(context.Background(), c, client.ContainerRemoveOptions{Force: true})
		}
	}
}

// killRank sends SIGKILL to the benchctl process of a job's rank (found by its
// environment: SLURM_JOB_ID and SLURM_PROCID) and returns when it was sent.
func killRank(t *testing.T, id string, rank int) time.Time {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if err != nil || len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "benchctl-e2e") || args[1] != "run" { // not srun's own command line
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		vars := "\x00" + string(env)
		if strings.Contains(vars, "\x00SLURM_JOB_ID="+id+"\x00") && strings.Contains(vars, "\x00SLURM_PROCID="+strconv.Itoa(rank)+"\x00") {
			pid, _ := strconv.Atoi(filepath.Base(p))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill rank %d (pid %d): %v", rank, pid, err)
			}
			return time.Now()
		}
	}
	t.Fatalf("no benchctl process of job %s rank %d", id, rank)
	return time.Time{}
}

// collectOutput runs benchctl collect on a job and returns what it printed.
func collectOutput(t *testing.T, tb *testbed.Testbed, shared, id string, extra ...string) string {
	t.Helper()
	cmd := exec.Command(tb.Benchctl(t), append([]string{"collect", id, "--shared-dir", shared}, extra...)...)
	cmd.Env = tb.Env()
	out, _ := cmd.CombinedOutput()
	return string(out)
}

package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/proctable"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
	"github.com/benchctl/benchctl/workload/engine/podmanservice"
)

// servicesOf are the pids of the Podman services a run of job started, by their marker.
func servicesOf(job string) []int {
	var out []int
	pids, _ := proctable.Pids()
	for _, pid := range pids {
		if v, ok := proctable.Getenv(pid, podmanservice.Marker)[podmanservice.Marker]; ok && strings.HasPrefix(v, job+"/") {
			if _, _, state, ok := proctable.Stat(pid); ok && state != 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}

func podmanServiceManifest(t *testing.T, command string) string {
	t.Helper()
	if _, err := os.Stat("/run/podman/podman.sock"); err == nil {
		t.Fatal("a Podman service answers on /run/podman/podman.sock: this test needs a node without one")
	}
	mf := filepath.Join(t.TempDir(), "benchmark.yaml")
	body := "name: podman-own-service\nimage: {dockerfile: " + repoPath(t, "models/dummy/Dockerfile") + "}\ngpu: {vendor: none}\nengine: podman\n" +
		"container: {network: host}\nbenchmarks:\n  - {name: b, command: " + command + "}\n"
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf
}

// withoutEngineWords is what the job script puts before benchctl so that no engine address
// reaches it: the testbed's TaskProlog names each node's Docker Engine in DOCKER_HOST.
const withoutEngineWords = "env -u DOCKER_HOST -u XDG_RUNTIME_DIR -u CONTAINER_HOST"

// engine: podman on 3 Slurm nodes with Podman installed and no service running: every
// node's run starts Podman's service itself, the job runs on them (built on rank 0, found
// by the others), and no service of the job is left afterwards.
func TestPodmanServiceBenchctlStarts(t *testing.T) {
	tb := testbed.RequirePodman(t)
	mf := podmanServiceManifest(t, `[/dummy, --rows, "2"]`)
	shared := tb.FreshDir(t)
	id, out, err := runJobWrapped(t, tb, mf, shared, true, nil, withoutEngineWords)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "benchctl started one for this run"); n != len(tb.Nodes) {
		t.Errorf("%d nodes say they started Podman's service, want %d:\n%s", n, len(tb.Nodes), out)
	}
	waitNoServices(t, id)
	for _, d := range nodeDirs(tb) {
		if st := readStatus(t, shared, id, d); st.Outcome != jobdir.OutcomeSuccess {
			t.Errorf("%s: outcome %s", d, st.Outcome)
		}
	}
}

// scancel mid-benchmark: each node's run stops its container, then the service it
// started; nothing of the job is left on any node.
func TestPodmanServiceEndsWithScancel(t *testing.T) {
	tb := testbed.RequirePodman(t)
	mf := podmanServiceManifest(t, `[/dummy, --rows, "1", --sleep, 300s]`)
	shared := tb.FreshDir(t)
	id, out, _ := runJobWrapped(t, tb, mf, shared, false, nil, withoutEngineWords)
	waitEveryNode(t, tb, shared, id, "the benchmark never ran on every node", func(_ int, s runner.Status) bool {
		return len(s.Benchmarks) >= 1 && s.Benchmarks[0].Outcome == runner.OutcomeRunning
	})
	if n := len(servicesOf(id)); n != len(tb.Nodes) {
		t.Fatalf("%d services of the job while it runs, want %d\n%s", n, len(tb.Nodes), out)
	}
	cancel := exec.Command("scancel", id)
	cancel.Env = tb.Env()
	if b, err := cancel.CombinedOutput(); err != nil {
		t.Fatalf("scancel: %v %s", err, b)
	}
	waitEveryNode(t, tb, shared, id, "a node never recorded its end", func(_ int, s runner.Status) bool { return s.FinishedAt != nil })
	waitNoServices(t, id)
	if out, _ := exec.Command("pgrep", "-f", "benchctl-"+id).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		ps, _ := exec.Command("ps", "-o", "pid,ppid,stat,etime,args", "-p", strings.Join(strings.Fields(string(out)), ",")).CombinedOutput()
		t.Fatalf("processes of the job's containers left:\n%s", ps)
	}
}

// waitNoServices waits until no Podman service of job id is left: a node's run ends it
// before it exits, but Slurm may say the job ended first.
func waitNoServices(t *testing.T, id string) {
	t.Helper()
	waitAllGone(t, "Podman services of job "+id, func() []int { return servicesOf(id) })
}

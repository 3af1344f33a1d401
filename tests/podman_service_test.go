package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/proctable"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/tests/testbed"
	"github.com/benchctl/benchctl/workload/engine/podmanservice"
)

// withoutEngine is this process's environment without an engine address: no DOCKER_HOST,
// no XDG_RUNTIME_DIR (root's only Podman socket is then /run/podman/podman.sock, which the
// testbed never starts: its engines listen on sockets of their own).
func withoutEngine(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DOCKER_HOST=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

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

// engine: podman on a node with Podman installed and no service running: the run starts
// Podman's service itself, runs the job on it, and leaves no service behind.
func TestPodmanServiceBenchctlStarts(t *testing.T) {
	tb := testbed.RequirePodman(t)
	mf := podmanServiceManifest(t, `[/dummy, --rows, "2"]`)
	shared := tb.FreshDir(t)
	id := fmt.Sprintf("pown-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tb.Benchctl(t), "run", "--manifest", mf, "--shared-dir", shared)
	cmd.Env = withoutEngine("BENCHCTL_JOB_ID=" + id)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "benchctl started one for this run") {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if pids := servicesOf(id); len(pids) != 0 {
		t.Fatalf("Podman services of the job left running: %v", pids)
	}
	host, _ := os.Hostname()
	if st := readStatus(t, shared, id, "0-"+host); st.Outcome != jobdir.OutcomeSuccess {
		t.Fatalf("outcome %s", st.Outcome)
	}
}

// SIGTERM mid-benchmark (what scancel sends): the run stops its container, then the
// service it started; nothing of the job is left.
func TestPodmanServiceEndsWithSIGTERM(t *testing.T) {
	tb := testbed.RequirePodman(t)
	mf := podmanServiceManifest(t, `[/dummy, --rows, "1", --sleep, 300s]`)
	shared := tb.FreshDir(t)
	id := fmt.Sprintf("pterm-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tb.Benchctl(t), "run", "--manifest", mf, "--shared-dir", shared)
	cmd.Env = withoutEngine("BENCHCTL_JOB_ID=" + id)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() { // until the benchmark runs in its container
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "benchmark starting") {
			break
		}
	}
	if len(servicesOf(id)) == 0 {
		cmd.Process.Kill()
		t.Fatalf("no service of the job while it runs:\n%s", log.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(stderr)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ctx.Err() != nil {
		t.Fatalf("after SIGTERM: %v\n%s%s", err, log.String(), rest)
	}
	if pids := servicesOf(id); len(pids) != 0 {
		t.Fatalf("Podman services of the job left after SIGTERM: %v\n%s%s", pids, log.String(), rest)
	}
	if out, _ := exec.Command("pgrep", "-f", "benchctl-"+id).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Fatalf("processes of the job's container left: %s", out)
	}
}

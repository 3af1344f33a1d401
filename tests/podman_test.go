package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/tests/testbed"
)

// podmanRun runs a one-node `benchctl run --engine podman` of a copy of the dummy example
// (built through Podman's compatible build) in a folder of the shared directory, as user
// (""/root: this process) with env; it returns the job folder and the output.
func podmanRun(t *testing.T, tb *testbed.Testbed, runAs string, env []string, extra ...string) (string, string, error) {
	t.Helper()
	dir := tb.FreshDir(t)
	return podmanRunIn(t, tb, dir, runAs, env, extra...)
}

// podmanRunIn is podmanRun in dir: a second run there finds the first's manifest, shared
// cache and job folders (it returns the newest job).
func podmanRunIn(t *testing.T, tb *testbed.Testbed, dir, runAs string, env []string, extra ...string) (string, string, error) {
	t.Helper()
	mf := filepath.Join(dir, "model", "benchmark.yaml")
	if _, err := os.Stat(mf); err != nil {
		podmanModel(t, dir)
	}
	shared := filepath.Join(dir, "shared")
	args := append([]string{"run", "--manifest", mf, "--shared-dir", shared}, extra...)
	var cmd *exec.Cmd
	if runAs != "" {
		u, err := user.Lookup(runAs)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		}); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(tb.Benchctl(t), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Env = append([]string{"HOME=" + dir, "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=/run/user/" + u.Uid}, env...)
	} else {
		cmd = exec.Command(tb.Benchctl(t), args...)
		cmd.Env = append(os.Environ(), env...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-done:
		}
	}()
	out, err := cmd.CombinedOutput()
	close(done)
	jobs, _ := filepath.Glob(filepath.Join(shared, "jobs", "local-*"))
	if len(jobs) == 0 {
		t.Fatalf("no job folder; output:\n%s", out)
	}
	slices.Sort(jobs)
	return jobs[len(jobs)-1], string(out), err
}

// podmanModel copies the dummy example into dir/model with a manifest of engine: podman,
// and makes dir/shared.
func podmanModel(t *testing.T, dir string) {
	t.Helper()
	model := filepath.Join(dir, "model")
	if out, err := exec.Command("cp", "-r", repoPath(t, "models/dummy"), model).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	// A key of this test's own: each engine builds the image itself, once per test run.
	body := fmt.Sprintf("name: podman-%d\nimage: {dockerfile: Dockerfile, buildArgs: {RUN: \"%d\"}}\ngpu: {vendor: none}\nengine: podman\nbenchmarks:\n  - {name: dummy, command: [/dummy, --rows, \"3\"], timeout: 5m, results: dummy.csv}\n",
		time.Now().UnixNano()%1000, time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(model, "benchmark.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// checkPodmanJob: the benchmark ran, its results are there, and job.json and node.json say
// the engine was Podman (rootless as asked).
func checkPodmanJob(t *testing.T, job, out string, rootless bool) (results string) {
	t.Helper()
	var j struct {
		Engine *jobdir.JobEngine `json:"engine"`
	}
	b, err := os.ReadFile(filepath.Join(job, jobdir.JobFile))
	if err != nil || json.Unmarshal(b, &j) != nil || j.Engine == nil {
		t.Fatalf("job.json: %v\n%s\n%s", err, b, out)
	}
	if j.Engine.Kind != "podman" || j.Engine.Name != "Podman Engine" || j.Engine.Rootless != rootless {
		t.Errorf("job.json engine = %+v, want Podman Engine, rootless %v", j.Engine, rootless)
	}
	nodes, _ := filepath.Glob(filepath.Join(job, "nodes", "0-*"))
	if len(nodes) != 1 {
		t.Fatalf("node folders: %v", nodes)
	}
	rec, err := os.ReadFile(filepath.Join(nodes[0], jobdir.NodeRecordFile))
	if err != nil || !strings.Contains(string(rec), `"kind": "podman"`) || strings.Contains(string(rec), `"rootless": true`) != rootless {
		t.Errorf("node.json: %v\n%s", err, rec)
	}
	if !strings.Contains(out, "msg=engine ") || !strings.Contains(out, "kind=podman") {
		t.Errorf("the log does not say which engine answered:\n%s", out)
	}
	results = filepath.Join(nodes[0], "results", "dummy", "dummy.csv")
	csv, err := os.ReadFile(results)
	if err != nil || strings.Count(string(csv), "\n") != 4 {
		t.Fatalf("results: %v\n%s\noutput:\n%s", err, csv, out)
	}
	return results
}

// A one-node run on rootful Podman: the image built through Podman's compatible build, the
// container started (Podman's default ulimits made every start fail here: "error setting
// rlimit type 7"), the results written; job.json and node.json say Podman.
func TestPodmanRunRootful(t *testing.T) {
	tb := testbed.RequirePodman(t)
	job, out, err := podmanRun(t, tb, "", []string{"DOCKER_HOST=" + tb.PodmanSockets[tb.Nodes[0]]})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	checkPodmanJob(t, job, out, false)
}

// A one-node run on rootless Podman as its user, with no DOCKER_HOST: benchctl finds the
// user's socket itself; what the container's root wrote lands in the node folder as the
// user's own files.
func TestPodmanRunRootless(t *testing.T) {
	tb := testbed.RequirePodman(t)
	job, out, err := podmanRun(t, tb, tb.PodmanUser, nil)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	res := checkPodmanJob(t, job, out, true)
	u, _ := user.Lookup(tb.PodmanUser)
	st, err := os.Stat(res)
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; strconv.Itoa(int(uid)) != u.Uid {
		t.Errorf("%s belongs to uid %d, want the user's %s", res, uid, u.Uid)
	}
}

// --engine podman where DOCKER_HOST names a Docker Engine is bad input naming both.
func TestPodmanRefusesDockerEngine(t *testing.T) {
	tb := testbed.RequirePodman(t)
	_, out, err := podmanRun(t, tb, "", []string{"DOCKER_HOST=" + tb.Sockets[tb.Nodes[0]]})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(out, "engine podman was asked for") || !strings.Contains(out, "Docker Engine") {
		t.Fatalf("run: %v, want exit 4 naming both engines\n%s", err, out)
	}
}

// The tar cache between two Podman engines: rank 0's engine (n1, rootful) builds and
// publishes the image; another engine (n2) loads the tar and finds the same image id (ids
// survive a save/load round trip on Podman, as on Docker), and runs it.
func TestPodmanCacheRoundTrip(t *testing.T) {
	tb := testbed.RequirePodman(t)
	dir := tb.FreshDir(t)
	job, out, err := podmanRunIn(t, tb, dir, "", []string{"DOCKER_HOST=" + tb.PodmanSockets[tb.Nodes[0]]})
	if err != nil {
		t.Fatalf("run on n1: %v\n%s", err, out)
	}
	checkPodmanJob(t, job, out, false)
	job, out, err = podmanRunIn(t, tb, dir, "", []string{"DOCKER_HOST=" + tb.PodmanSockets[tb.Nodes[1]]})
	if err != nil {
		t.Fatalf("run on n2: %v\n%s", err, out)
	}
	if !strings.Contains(out, "image loaded from the cache") {
		t.Errorf("n2 did not load the image from the cache:\n%s", out)
	}
	checkPodmanJob(t, job, out, false)
}

// podmanJob runs a 3-node Slurm job of the manifest mf as user u (sbatch --uid), each task
// on its own node's rootless Podman engine (the testbed's TaskProlog names the node's Docker
// Engine: the job script points each task at the node's rootless Podman engine instead). It
// returns the job id, the job's output and sbatch's error.
func podmanJob(t *testing.T, tb *testbed.Testbed, dir, mf string, u *user.User) (string, string, error) {
	t.Helper()
	var hosts strings.Builder
	for _, n := range tb.Nodes {
		fmt.Fprintf(&hosts, "%s) DOCKER_HOST=%s ;; ", n, tb.PodmanRootlessSockets[n])
	}
	script := filepath.Join(dir, "job.sh")
	body := "#!/bin/sh\nexec srun --ntasks-per-node=1 sh -c 'case \"$SLURMD_NODENAME\" in " + hosts.String() + "esac; export DOCKER_HOST; " +
		"export XDG_RUNTIME_DIR=/run/user/" + u.Uid + " HOME=" + dir + "; " +
		"exec \"$BENCHCTL_BIN\" run --manifest " + mf + " --shared-dir " + filepath.Join(dir, "shared") + " --barrier-timeout 3m'\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "job.out")
	os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", "--parsable", "--wait", "--uid="+u.Uid, "--gid="+u.Gid, "-N", fmt.Sprint(len(tb.Nodes)),
		"--ntasks-per-node=1", "-p", tb.Partition, "-o", out, "-J", "podman-3", "-D", dir, script)
	cmd.Env = append(tb.Env(), "BENCHCTL_BIN="+tb.Benchctl(t))
	stdout, err := cmd.Output()
	log, _ := os.ReadFile(out)
	id := strings.TrimSpace(strings.Split(string(stdout), ";")[0])
	if id == "" {
		t.Fatalf("sbatch gave no job id: %v\n%s", err, log)
	}
	return id, string(log), err
}

// A 3-node job on rootless Podman, as the engines' user: rank 0's engine builds the image,
// it is streamed to the other two (each loading it as it passes it on) and written to the
// shared cache, every node runs it and leaves its results, owned by the user; collect makes
// the table. Then a fault: the benchmark fails on rank 1, and the job fails with its exit
// code, rank 1 leaving diagnostics.
func TestPodmanThreeNodeJobRootless(t *testing.T) {
	tb := testbed.RequirePodman(t)
	dir := tb.FreshDir(t)
	podmanModel(t, dir)
	u, err := user.Lookup(tb.PodmanUser)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	mf := filepath.Join(dir, "model", "benchmark.yaml")
	id, log, err := podmanJob(t, tb, dir, mf, u)
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, log)
	}
	for _, s := range []string{"image streamed to the other nodes", "kind=podman", "rootless=true"} {
		if !strings.Contains(log, s) {
			t.Errorf("the job's log lacks %q:\n%s", s, log)
		}
	}
	job := filepath.Join(dir, "shared", "jobs", id)
	nodes, _ := filepath.Glob(filepath.Join(job, "nodes", "*"))
	if len(nodes) != len(tb.Nodes) {
		t.Fatalf("node folders %v, want %d", nodes, len(tb.Nodes))
	}
	for _, nd := range nodes {
		res := filepath.Join(nd, "results", "dummy", "dummy.csv")
		st, err := os.Stat(res)
		if err != nil {
			t.Errorf("%s: %v", nd, err)
			continue
		}
		if got := st.Sys().(*syscall.Stat_t).Uid; int(got) != uid {
			t.Errorf("%s belongs to uid %d, want %d", res, got, uid)
		}
		rec, _ := os.ReadFile(filepath.Join(nd, jobdir.NodeRecordFile))
		if !strings.Contains(string(rec), `"kind": "podman"`) || !strings.Contains(string(rec), `"rootless": true`) {
			t.Errorf("%s node.json does not say rootless Podman:\n%s", nd, rec)
		}
	}
	col := exec.Command(tb.Benchctl(t), "collect", id, "--shared-dir", filepath.Join(dir, "shared"), "--no-slurm", "-o", "csv")
	col.Env = tb.Env()
	if out, err := col.CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("collect: %v\n%s", err, out)
	}

	// The fault: rank 1's benchmark exits 3; the same image, already on every engine.
	b, _ := os.ReadFile(mf)
	bad := filepath.Join(dir, "model", "fails.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(b), `--rows, "3"]`, `--rows, "3", --fail-rank, "1", --exit-code, "3", --sleep, 2s]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	id, log, err = podmanJob(t, tb, dir, bad, u)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("the failing job: %v, want exit 3\n%s", err, log)
	}
	diag, _ := filepath.Glob(filepath.Join(dir, "shared", "jobs", id, "nodes", "1-*", "diagnostics", "dummy", "*"))
	if len(diag) == 0 {
		t.Errorf("rank 1 left no diagnostics:\n%s", log)
	}
}

package tests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// podmanRootful is each node's rootful Podman engine, podmanRootlessEngine its rootless one.
var (
	podmanRootful        = testEngine{name: "podman", podman: true}
	podmanRootlessEngine = testEngine{name: "podman-rootless", podman: true, rootless: true}
)

// podmanJobContainers lists the containers of job id on e's engine of node, by label.
func podmanJobContainers(t *testing.T, tb *testbed.Testbed, e testEngine, node, id string) []string {
	t.Helper()
	res, err := e.client(t, tb, node).ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", runner.LabelJob+"="+id)})
	if err != nil {
		t.Fatalf("%s %s: listing containers: %v", e.name, node, err)
	}
	var out []string
	for _, c := range res.Items {
		out = append(out, strings.Join(c.Names, ","))
	}
	return out
}

// runOneNode runs `benchctl run` of mf as a one-node job with env added (as user runAs when
// not ""), in shared, a folder of its own; it returns the job folder and the output.
func runOneNode(t *testing.T, tb *testbed.Testbed, mf, shared, runAs string, env ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tb.Benchctl(t), "run", "--manifest", mf, "--shared-dir", shared)
	cmd.Env = append(os.Environ(), env...)
	if runAs != "" {
		u, err := user.Lookup(runAs)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{filepath.Dir(mf), shared} {
			if err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, uid, gid)
			}); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Env = append([]string{"HOME=" + filepath.Dir(mf), "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=/run/user/" + u.Uid}, env...)
	}
	out, err := cmd.CombinedOutput()
	var jobs []string // the job folders (shared is the test's own: every job is one of its runs)
	entries, _ := os.ReadDir(filepath.Join(shared, "jobs"))
	for _, e := range entries {
		if e.IsDir() {
			if _, serr := os.Stat(filepath.Join(shared, "jobs", e.Name(), "nodes")); serr == nil {
				jobs = append(jobs, filepath.Join(shared, "jobs", e.Name()))
			}
		}
	}
	if len(jobs) != 1 {
		t.Fatalf("job folders %v, want one; output:\n%s", jobs, out)
	}
	return jobs[0], string(out), err
}

// A benchmark past its timeout on rootful Podman: diagnostics are taken while it runs (the
// engine's process list names it: Podman's top answers in Docker's shape), then it is
// stopped and removed (found by label). Then cleanup by label: a container of another job
// left on the engine (created, never started) is removed by `benchctl cleanup`.
func TestPodmanTimeoutDiagnosticsAndCleanup(t *testing.T) {
	tb := testbed.RequirePodman(t)
	shared := tb.FreshDir(t)
	dir := t.TempDir()
	mf := filepath.Join(dir, "benchmark.yaml")
	body := "name: podman-timeout\nimage: {dockerfile: " + repoPath(t, "models/dummy/Dockerfile") + "}\ngpu: {vendor: none}\nengine: podman\n" +
		"benchmarks:\n  - {name: sleepy, command: [/dummy, --rows, \"1\", --sleep, 300s], timeout: 3s}\n"
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	host := podmanRootful.host(t, tb, tb.Nodes[0])
	id := fmt.Sprintf("ptimeout-%d", time.Now().UnixNano())
	start := time.Now()
	job, out, err := runOneNode(t, tb, mf, shared, "", "DOCKER_HOST="+host, "BENCHCTL_JOB_ID="+id)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("run: %v, want exit 3\n%s", err, out)
	}
	if took := time.Since(start); took > 3*time.Minute {
		t.Errorf("took %v", took)
	}
	nodes, _ := filepath.Glob(filepath.Join(job, "nodes", "0-*"))
	if len(nodes) != 1 {
		t.Fatalf("node folders %v\n%s", nodes, out)
	}
	s := readStatus(t, shared, filepath.Base(job), filepath.Base(nodes[0]))
	if len(s.Benchmarks) != 1 {
		t.Fatalf("status %+v", s)
	}
	if b := s.Benchmarks[0]; b.Outcome != runner.OutcomeTimeout || !strings.Contains(b.Error, "timed out after 3s") || b.Diagnostics == "" {
		t.Fatalf("benchmark status %+v\n%s", b, out)
	}
	sum, err := os.ReadFile(filepath.Join(nodes[0], jobdir.DiagRel("sleepy"), jobdir.DiagSummaryFile))
	if err != nil || !strings.Contains(string(sum), "processes (") || !strings.Contains(string(sum), "/dummy") {
		t.Fatalf("diagnostics did not list the running processes: %v\n%s", err, sum)
	}
	if left := podmanJobContainers(t, tb, podmanRootful, tb.Nodes[0], id); len(left) != 0 {
		t.Errorf("containers left after the timeout: %v", left)
	}

	// Cleanup by label: a container of another job, left on the engine.
	orphan := id + "-orphan"
	eng := podmanRootful.client(t, tb, tb.Nodes[0])
	name := "benchctl-" + orphan + "-0-r0-sleepy"
	created, err := eng.ContainerCreate(context.Background(), client.ContainerCreateOptions{Name: name,
		Config: &container.Config{Image: tb.ShellImage, Cmd: []string{"sleep", "600"},
			Labels: map[string]string{runner.LabelJob: orphan, runner.LabelAttempt: "0", runner.LabelRank: "0", runner.LabelBenchmark: "sleepy"}},
		HostConfig: &container.HostConfig{NetworkMode: "host"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = eng.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	})
	cmd := exec.Command(tb.Benchctl(t), "cleanup", "--job", orphan, "--shared-dir", shared, "--host", tb.Nodes[0], "--engine", "podman")
	cmd.Env = append(tb.Env(), "DOCKER_HOST="+host)
	cout, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(cout), name) || !strings.Contains(string(cout), "removed") {
		t.Fatalf("benchctl cleanup: %v\n%s", err, cout)
	}
	if left := podmanJobContainers(t, tb, podmanRootful, tb.Nodes[0], orphan); len(left) != 0 {
		t.Errorf("containers left after cleanup: %v", left)
	}
}

// Supervision on rootful Podman, 3 nodes: rank 2's benchmark fails after 2 s while ranks 0
// and 1 would sleep 10 minutes; every node ends within 10 s of the failure, ranks 0 and 1
// say they were aborted because of rank 2 and leave diagnostics, no container is left on any
// node's engine.
func TestPodmanFailFastAbortsEveryNode(t *testing.T) {
	tb := testbed.RequirePodman(t)
	base := tb.FreshDir(t)
	for _, n := range tb.Nodes {
		if err := os.WriteFile(filepath.Join(base, n+".docker_host"), []byte(podmanRootful.host(t, tb, n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mf := manifestWith(t, "podman-failfast", []string{"/dummy", "--rows", "1", "--sleep", "600s", "--fail-rank", "2", "--fail-after", "2s", "--exit-code", "1"}, "", "engine: podman\n")
	id, out, err := runPerNodeJob(t, tb, base, mf, "podman-failfast")
	t.Cleanup(func() {
		for _, n := range tb.Nodes {
			for _, c := range podmanJobContainers(t, tb, podmanRootful, n, id) {
				_, _ = podmanRootful.client(t, tb, n).ContainerRemove(context.Background(), strings.Split(c, ",")[0], client.ContainerRemoveOptions{Force: true})
			}
		}
	})
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	dirs := nodeDirs(tb)
	status := func(i int) runner.Status { return readStatus(t, filepath.Join(base, tb.Nodes[i]), id, dirs[i]) }
	bad := status(2)
	if bad.ExitCode != 3 || len(bad.Benchmarks) != 1 || bad.Benchmarks[0].Outcome != runner.OutcomeFailure || bad.Benchmarks[0].FinishedAt == nil {
		t.Fatalf("rank 2: %+v\n%s", bad, out)
	}
	failedAt := *bad.Benchmarks[0].FinishedAt
	want := "aborted: rank 2 (" + tb.Nodes[2] + ") failed benchmark dummy: exited with code 1"
	for i := range dirs {
		s := status(i)
		if s.FinishedAt == nil {
			t.Fatalf("%s never recorded its end: %+v", dirs[i], s)
		}
		if took := s.FinishedAt.Sub(failedAt); took > 10*time.Second {
			t.Errorf("%s ended %v after rank 2's failure (want within 10 s)", dirs[i], took)
		}
		if i == 2 {
			continue
		}
		if b := s.Benchmarks[0]; s.ExitCode != 3 || b.Outcome != runner.OutcomeAborted || !strings.Contains(b.Error, want) || b.Diagnostics == "" {
			t.Errorf("%s: exit %d, benchmark %+v; want aborted naming rank 2, with diagnostics", dirs[i], s.ExitCode, b)
		}
	}
	for _, n := range tb.Nodes {
		if left := podmanJobContainers(t, tb, podmanRootful, n, id); len(left) != 0 {
			t.Errorf("%s: containers left: %v", n, left)
		}
	}
}

// A private registry (htpasswd) on rootful Podman: wrong credentials fail the run naming the
// registry and how to log in; the right ones, from the docker CLI's config, pull the image
// with the id Docker pushed; the password reaches no file and no log. (Podman takes the
// testbed's plain-HTTP registries only as podman-up.sh's registries.conf marks them.)
func TestPodmanPrivateRegistryCredentials(t *testing.T) {
	tb := testbed.RequirePodman(t)
	ref, id, _ := pushUnique(t, tb, tb.AuthRegistry, "podman-private")
	host := podmanRootful.host(t, tb, tb.Nodes[0])
	t.Cleanup(func() {
		_, _ = podmanRootful.client(t, tb, tb.Nodes[0]).ImageRemove(context.Background(), id, client.ImageRemoveOptions{Force: true})
	})
	for _, c := range []struct {
		name, password string
		ok             bool
	}{{"wrong", "not-the-password-" + fmt.Sprint(time.Now().UnixNano()), false}, {"right", tb.AuthRegistryPassword(t), true}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tb.WriteDockerConfig(t, filepath.Join(t.TempDir(), "docker"), tb.AuthRegistryUser, c.password)
			shared := tb.FreshDir(t)
			job, out, err := runOneNode(t, tb, refManifest(t, ref, "engine: podman\n"), shared, "", "DOCKER_HOST="+host, "DOCKER_CONFIG="+cfg)
			if c.ok != (err == nil) {
				t.Fatalf("run: %v\n%s", err, out)
			}
			nodes, _ := filepath.Glob(filepath.Join(job, "nodes", "0-*"))
			if len(nodes) != 1 {
				t.Fatalf("node folders %v", nodes)
			}
			s := readStatus(t, shared, filepath.Base(job), filepath.Base(nodes[0]))
			if !c.ok && (!strings.Contains(s.Error, "the registry "+tb.AuthRegistry+" refused access") || !strings.Contains(s.Error, "docker login "+tb.AuthRegistry)) {
				t.Errorf("exit %d: %s", s.ExitCode, s.Error)
			}
			if c.ok && s.ImageID != id {
				t.Errorf("ran %s, want %s (the id Docker pushed)", s.ImageID, id)
			}
			var leaks []string
			filepath.WalkDir(shared, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if data, _ := os.ReadFile(p); strings.Contains(string(data), c.password) {
						leaks = append(leaks, p)
					}
				}
				return nil
			})
			if strings.Contains(out, c.password) || len(leaks) > 0 {
				t.Errorf("the password is in the output or in %v", leaks)
			}
		})
	}
}

// Rootless keep-id: an image whose USER is not root (1000:1000, or the name bench that the
// image's /etc/passwd gives 1000:1000) run on rootless Podman as its user writes its results
// as that user's own files, in a results folder that is not world-writable (without keep-id
// they belonged to a subordinate id, 200999 here, in a 01777 folder: seen).
//
// The image copies the shell image's files into a new first layer: the shell image's own
// first layer has a root folder of mode 0700 (up.sh tars a mktemp -d folder), which Docker's
// overlay2 does not apply and rootless Podman's vfs does, so no user but root could run
// anything in it there ("stat /bin/sh: permission denied").
func TestPodmanRootlessKeepID(t *testing.T) {
	tb := testbed.RequirePodman(t)
	u, err := user.Lookup(tb.PodmanUser)
	if err != nil {
		t.Fatal(err)
	}
	for name, lines := range map[string]string{
		"numeric": "USER 1000:1000\n",
		"named":   "RUN mkdir -p /etc && echo bench:x:1000:1000::/:/bin/sh >>/etc/passwd && echo bench:x:1000: >>/etc/group\nUSER bench\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := tb.FreshDir(t)
			model := filepath.Join(dir, "model")
			if err := os.MkdirAll(model, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(model, "Dockerfile"), []byte("FROM scratch\nCOPY --from="+tb.ShellImage+" / /\nENV PATH=/bin:/usr/bin\nARG RUN\n"+lines), 0o644); err != nil {
				t.Fatal(err)
			}
			body := fmt.Sprintf("name: podman-keepid-%s\nimage: {dockerfile: Dockerfile, buildArgs: {RUN: \"%d\"}}\ngpu: {vendor: none}\nengine: podman\n"+
				"benchmarks:\n  - {name: ids, command: [/bin/sh, -c, 'id -u > %s/uid.txt; id -g >> %s/uid.txt; echo performance,metric > %s/ids.csv; echo 1,x >> %s/ids.csv'], results: ids.csv}\n",
				name, time.Now().UnixNano(), runner.OutputDir, runner.OutputDir, runner.OutputDir, runner.OutputDir)
			mf := filepath.Join(model, "benchmark.yaml")
			if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			shared := filepath.Join(dir, "shared")
			if err := os.MkdirAll(shared, 0o755); err != nil {
				t.Fatal(err)
			}
			job, out, err := runOneNode(t, tb, mf, shared, tb.PodmanUser, "DOCKER_HOST="+podmanRootlessEngine.host(t, tb, tb.Nodes[0]))
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			nodes, _ := filepath.Glob(filepath.Join(job, "nodes", "0-*"))
			if len(nodes) != 1 {
				t.Fatalf("node folders %v", nodes)
			}
			res := filepath.Join(nodes[0], "results", "ids")
			if b, err := os.ReadFile(filepath.Join(res, "uid.txt")); err != nil || strings.Fields(string(b))[0] != "1000" {
				t.Errorf("the container ran as %q (%v), want the image's USER 1000", b, err)
			}
			for _, p := range []string{res, filepath.Join(res, "uid.txt"), filepath.Join(res, "ids.csv")} {
				st, err := os.Stat(p)
				if err != nil {
					t.Errorf("%v\n%s", err, out)
					continue
				}
				sys := st.Sys().(*syscall.Stat_t)
				if strconv.Itoa(int(sys.Uid)) != u.Uid {
					t.Errorf("%s belongs to uid %d, want the user's %s", p, sys.Uid, u.Uid)
				}
				if p != res && strconv.Itoa(int(sys.Gid)) != u.Gid {
					t.Errorf("%s belongs to gid %d, want the user's group %s", p, sys.Gid, u.Gid)
				}
				if p == res && st.Mode()&0o002 != 0 {
					t.Errorf("the results folder is world-writable: %v", st.Mode())
				}
			}
			if strings.Contains(out, "writable by every user") || strings.Contains(out, "subordinate id") {
				t.Errorf("the run warned:\n%s", out)
			}
		})
	}
}

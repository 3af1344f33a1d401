package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// repoPath returns an absolute path inside the repository.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runJob submits `srun benchctl run` over every node with sbatch and returns the job id,
// its output and whether it succeeded. wait=false returns right after submitting.
func runJob(t *testing.T, tb *testbed.Testbed, manifest, shared string, wait bool, extra ...string) (string, string, error) {
	t.Helper()
	return runJobWith(t, tb, manifest, shared, wait, nil, extra...)
}

// runJobWith is runJob with extra sbatch options.
func runJobWith(t *testing.T, tb *testbed.Testbed, manifest, shared string, wait bool, sbatch []string, extra ...string) (string, string, error) {
	t.Helper()
	return runJobWrapped(t, tb, manifest, shared, wait, sbatch, "", extra...)
}

// runJobWrapped is runJobWith where srun starts benchctl through wrap (words of the job
// script, such as "env -u DOCKER_HOST"), when it is not empty.
func runJobWrapped(t *testing.T, tb *testbed.Testbed, manifest, shared string, wait bool, sbatch []string, wrap string, extra ...string) (string, string, error) {
	t.Helper()
	work := t.TempDir()
	out := filepath.Join(shared, fmt.Sprintf("job-%d.out", time.Now().UnixNano()))
	script := filepath.Join(work, "job.sh")
	if wrap != "" {
		wrap += " "
	}
	body := "#!/bin/sh\nexec srun --ntasks-per-node=1 " + wrap + "\"$BENCHCTL_BIN\" run --manifest \"$BENCHCTL_MANIFEST\" --shared-dir \"$BENCHCTL_SHARED\" --barrier-timeout 3m " + strings.Join(extra, " ") + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--parsable", "-N", fmt.Sprint(len(tb.Nodes)), "--ntasks-per-node=1", "-p", tb.Partition, "-o", out, "-J", "e2e-" + t.Name()}
	if wait {
		args = append(args, "--wait")
	}
	args = append(args, sbatch...)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", append(args, script)...)
	cmd.Env = append(tb.Env(), "BENCHCTL_BIN="+tb.Benchctl(t), "BENCHCTL_MANIFEST="+manifest, "BENCHCTL_SHARED="+shared, "BENCHCTL_AGENT="+tb.Agent(t))
	cmd.Dir = work
	stdout, err := cmd.Output()
	id := strings.TrimSpace(strings.Split(string(stdout), ";")[0])
	data, _ := os.ReadFile(out)
	if id == "" {
		t.Fatalf("sbatch gave no job id: %v\n%s", err, data)
	}
	if err != nil && wait {
		logBenchmarkLogs(t, shared, id)
	}
	return id, string(data), err
}

// logBenchmarkLogs logs the end of every benchmark log of a failed job, so that a
// benchmark's own complaint is in the test's output.
func logBenchmarkLogs(t *testing.T, shared, id string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(jobdir.Layout{Shared: shared}.Job(id, 0).Nodes(), "*", jobdir.LogName("*")))
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if len(data) > 4096 {
			data = data[len(data)-4096:]
		}
		t.Logf("%s (its end):\n%s", p, data)
	}
}

// readStatus is a node's status.json with its trial log's records (jobdir.ReadNodeStatus).
func readStatus(t *testing.T, shared, job, nodeDir string) runner.Status {
	t.Helper()
	s, err := jobdir.ReadNodeStatus(&safefile.Reader{}, jobdir.Layout{Shared: shared}.Job(job, 0).NodeNamed(nodeDir))
	if err != nil {
		t.Fatalf("status of %s: %v", nodeDir, err)
	}
	return *s
}

func nodeDirs(tb *testbed.Testbed) []string {
	out := make([]string, len(tb.Nodes))
	for i, n := range tb.Nodes {
		out[i] = fmt.Sprintf("%d-%s", i, n)
	}
	return out
}

// removeByKey removes every image labelled with key from every engine.
func removeByKey(t *testing.T, tb *testbed.Testbed, key string) {
	for _, n := range tb.Nodes {
		for _, id := range imagesWithKey(t, tb, n, key) {
			removeImage(t, tb.Engine(t, n), id)
		}
	}
}

// imagesWithKey lists the ids of node's images labelled with key.
func imagesWithKey(t *testing.T, tb *testbed.Testbed, node, key string) []string {
	t.Helper()
	res, err := tb.Engine(t, node).ImageList(context.Background(), client.ImageListOptions{Filters: make(client.Filters).Add("label", image.LabelKey+"="+key)})
	if err != nil {
		t.Fatalf("%s: listing images: %v", node, err)
	}
	var ids []string
	for _, im := range res.Items {
		ids = append(ids, im.ID)
	}
	return ids
}

func manifestKey(t *testing.T, path string) string {
	m := loadManifest(t, path)
	k, err := image.Key(image.InputFromManifest(m))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The allreduce example on every node (distribution: auto, the default): built on n1 only,
// streamed to the others as the cache did not have it, and written to the cache from the
// same docker save; sum checked by the program, all SUCCESS. Again: no build and no load
// anywhere. Then, with the image gone from the workers' engines only: the cache has it and
// every node sees the shared directory, so the workers load it from the cache.
func TestRunAllreduceOnEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := repoPath(t, "models/allreduce/benchmark.yaml")
	key := manifestKey(t, mf)
	removeByKey(t, tb, key)

	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("job %s: %v\n%s", id, err, out)
	}
	for i, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeSuccess || len(s.Benchmarks) != 1 || s.Benchmarks[0].Outcome != "success" || s.ImageKey != key {
			t.Errorf("%s: %+v", d, s)
		}
		wantLine := "image loaded from the stream"
		if i == 0 {
			wantLine = "image not cached: building from the manifest"
		}
		if !strings.Contains(out, fmt.Sprintf("msg=%q rank=%d", wantLine, i)) {
			t.Errorf("rank %d did not log %q", i, wantLine)
		}
	}
	if strings.Count(out, "image not cached: building") != 1 {
		t.Errorf("more than one node built")
	}
	if !strings.Contains(out, "image written to the cache as it streamed") {
		t.Errorf("rank 0 did not write the cache entry while streaming:\n%s", out)
	}
	cache, err := image.OpenCache(shared)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := cache.Verify(key, nil); err != nil {
		t.Errorf("the cache entry written while streaming: %v", err)
	} else if img, _ := findKey(t, tb, tb.Nodes[0], key); e.ImageID != img {
		t.Errorf("the cache entry is image %s, rank 0 runs %s", e.ImageID, img)
	}
	j, err := jobdir.ReadJob(jobdir.Layout{Shared: shared}.Job(id, 0).JobFile())
	if err != nil || j.Image.Distribution != "stream" {
		t.Errorf("job.json says the image went by %q, want stream (%v)", j.Image.Distribution, err)
	}
	for _, n := range tb.Nodes { // every engine has it now
		if _, ok := findKey(t, tb, n, key); !ok {
			t.Errorf("%s has no image with key %s", n, image.ShortKey(key))
		}
	}
	csv, err := os.ReadFile(filepath.Join(jobdir.Layout{Shared: shared}.Job(id, 0).Node(0, tb.Nodes[0]).Results("allreduce"), "allreduce.csv"))
	if err != nil || !strings.Contains(string(csv), "allreduce_busbw") {
		t.Fatalf("rank 0's results: %v\n%s", err, csv)
	}

	id2, out2, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("second job %s: %v\n%s", id2, err, out2)
	}
	if strings.Count(out2, "image already present on this node's engine") != len(tb.Nodes) ||
		strings.Contains(out2, "building") || strings.Contains(out2, "loaded from the") {
		t.Errorf("the second run built or loaded:\n%s", out2)
	}

	for _, n := range tb.Nodes[1:] {
		if img, ok := findKey(t, tb, n, key); ok {
			removeImage(t, tb.Engine(t, n), img)
		}
	}
	id3, out3, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("third job %s: %v\n%s", id3, err, out3)
	}
	if c := strings.Count(out3, "image loaded from the cache"); c != len(tb.Nodes)-1 || strings.Contains(out3, "from the stream") {
		t.Errorf("%d workers loaded from the cache, want %d, none from the stream:\n%s", c, len(tb.Nodes)-1, out3)
	}
	if !strings.Contains(out3, "every node loads the image from the shared cache") {
		t.Errorf("rank 0 did not say why it chose the cache:\n%s", out3)
	}
}

// findKey is node's image labelled with key, if it has one.
func findKey(t *testing.T, tb *testbed.Testbed, node, key string) (string, bool) {
	ids := imagesWithKey(t, tb, node, key)
	if len(ids) == 0 {
		return "", false
	}
	return ids[0], true
}

// A build that fails on rank 0: every worker exits within 5 s with the build's reason.
func TestRunBuildFailureStopsEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	ctxDir := testbed.HelloContext(t, t.TempDir(), nil)
	mf := testbed.WriteManifest(t, ctxDir, "buildfail")
	os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY . /\nRUN [\"/hello\", \"fail\"]\n"), 0o644)
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
		if s.Outcome != runner.OutcomeFailure || s.ExitCode != 2 || !strings.Contains(s.Error, "build failed") || !strings.Contains(s.Error, "failing on purpose") {
			t.Errorf("%s: outcome %s exit %d error %q", d, s.Outcome, s.ExitCode, s.Error)
		}
		if s.FinishedAt == nil || s.FinishedAt.Sub(failedAt) > 5*time.Second {
			t.Errorf("%s ended %v after rank 0's build failed", d, s.FinishedAt.Sub(failedAt))
		}
	}
}

// dummyManifest writes a manifest for the dummy example with the given command.
func dummyManifest(t *testing.T, name string, command []string) string {
	t.Helper()
	return manifestWith(t, name, command, "", "")
}

// A benchmark that exits 3 on n2 only, with onFailure: continue: the job fails with 3, n2
// has diagnostics, the other nodes' results are intact (they were not aborted).
func TestRunOneNodeFails(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := manifestWith(t, "onefails", []string{"/dummy", "--rows", "2", "--fail-rank", "1", "--exit-code", "3", "--sleep", "3s"}, ", onFailure: continue", "")
	id, out, err := runJob(t, tb, mf, shared, true)
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	dirs := nodeDirs(tb)
	bad := readStatus(t, shared, id, dirs[1])
	if bad.Outcome != runner.OutcomeFailure || bad.ExitCode != 3 || bad.Benchmarks[0].ExitCode != 3 || bad.Benchmarks[0].Diagnostics == "" {
		t.Fatalf("n2: %+v", bad)
	}
	sum, err := os.ReadFile(filepath.Join(jobdir.Layout{Shared: shared}.Job(id, 0).NodeNamed(dirs[1]).Diagnostics("dummy"), jobdir.DiagSummaryFile))
	if err != nil || !strings.Contains(string(sum), "exit code:  3") || !strings.Contains(string(sum), "fails on purpose") {
		t.Fatalf("n2 diagnostics: %v\n%s", err, sum)
	}
	for _, d := range []string{dirs[0], dirs[2]} {
		s := readStatus(t, shared, id, d)
		csv, err := os.ReadFile(filepath.Join(jobdir.Layout{Shared: shared}.Job(id, 0).NodeNamed(d).Results("dummy"), "dummy.csv"))
		if s.Outcome != runner.OutcomeSuccess || err != nil || !strings.Contains(string(csv), "dummy_1") {
			t.Errorf("%s: %s, results %v", d, s.Outcome, err)
		}
	}
}

// scancel in the middle of a run: no benchctl container is left on any engine and every
// node's status says cancelled.
func TestRunScancel(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := dummyManifest(t, "cancelled", []string{"/dummy", "--rows", "1", "--sleep", "300s"})
	id, _, _ := runJob(t, tb, mf, shared, false)
	waitAllRunning(t, tb, shared, id)
	time.Sleep(time.Second)
	scancel := exec.Command("scancel", id)
	scancel.Env = tb.Env()
	if out, err := scancel.CombinedOutput(); err != nil {
		t.Fatalf("scancel: %v %s", err, out)
	}
	waitJobGone(t, tb, id, 5*time.Minute)
	for _, n := range tb.Nodes {
		res, err := tb.Engine(t, n).ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", runner.LabelJob+"="+id)})
		if err != nil || len(res.Items) != 0 {
			t.Errorf("%s: containers left: %v %v", n, res.Items, err)
		}
	}
	for _, d := range nodeDirs(tb) {
		if s := readStatus(t, shared, id, d); s.Outcome != runner.OutcomeCancelled || s.Benchmarks[0].Outcome != runner.OutcomeCancelled {
			t.Errorf("%s: outcome %s, benchmark %+v", d, s.Outcome, s.Benchmarks)
		}
	}
}

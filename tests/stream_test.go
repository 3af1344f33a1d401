package tests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// distribution: stream with a --shared-dir that is NOT shared: every node has its own
// folder (the job's secret comes from BENCHCTL_JOB_SECRET, as benchctl submit passes it).
// Rank 0 builds the image and streams it along the chain; every node runs it; no worker
// writes an image tar.
func TestStreamWithoutASharedDirectory(t *testing.T) {
	tb := testbed.Require(t)
	base := tb.FreshDir(t)
	mf := streamManifest(t, "stream", `["/allreduce", "--size", "8M", "--iters", "3", "--warmup", "1"]`)
	removeByKey(t, tb, manifestKey(t, mf)) // every node starts cold
	id, log, err := runPerNodeJob(t, tb, base, mf, "e2e-stream")
	if err != nil {
		t.Fatalf("job: %v\n%s", err, log)
	}
	var imageID string
	for i, n := range tb.Nodes {
		shared := filepath.Join(base, n)
		s := readStatus(t, shared, id, fmt.Sprintf("%d-%s", i, n))
		if s.Outcome != runner.OutcomeSuccess || s.ImageID == "" {
			t.Fatalf("%s: %s: %s\n%s", n, s.Outcome, s.Error, log)
		}
		if imageID == "" {
			imageID = s.ImageID
		} else if s.ImageID != imageID {
			t.Errorf("%s ran %s, rank 0 %s", n, s.ImageID, imageID)
		}
		if i > 0 {
			if ents, _ := os.ReadDir(image.CacheLayout{Shared: shared}.Dir()); len(ents) != 0 {
				t.Errorf("%s wrote %d cache entries; a streamed image is written nowhere", n, len(ents))
			}
		}
	}
	if c := strings.Count(log, "image loaded from the stream"); c != len(tb.Nodes)-1 {
		t.Errorf("%d nodes loaded from the stream, want %d:\n%s", c, len(tb.Nodes)-1, log)
	}

	// Again: every engine has the image now, so rank 0 streams nothing (the nodes say so
	// at the "have" barrier), and every node runs it.
	id2, log2, err := runPerNodeJob(t, tb, base, mf, "e2e-stream-again")
	if err != nil {
		t.Fatalf("second job: %v\n%s", err, log2)
	}
	for i, n := range tb.Nodes {
		if s := readStatus(t, filepath.Join(base, n), id2, fmt.Sprintf("%d-%s", i, n)); s.Outcome != runner.OutcomeSuccess || s.ImageID != imageID {
			t.Errorf("%s: %s on %s: %s", n, s.Outcome, s.ImageID, s.Error)
		}
	}
	if !strings.Contains(log2, "every node has the image already; nothing to stream") ||
		strings.Contains(log2, "from the stream") || strings.Contains(log2, "passed the stream on") || strings.Contains(log2, "image streamed to") {
		t.Errorf("the second job streamed the image that every node had:\n%s", log2)
	}
}

// A flipped byte in rank 0's cached tar: rank 0 streams it, the checksum at the end does not
// match, the stream is aborted on every rank, no worker's engine gets the image, and the job
// fails (exit 1) naming rank 0, where the damage began.
func TestStreamOfADamagedTarLoadsNothing(t *testing.T) {
	tb := testbed.Require(t)
	base := tb.FreshDir(t)
	mf := streamManifest(t, "stream", `["/allreduce", "--size", "1M", "--iters", "1", "--warmup", "0"]`)
	key := manifestKey(t, mf)
	removeByKey(t, tb, key)
	// Build into n1's own folder, then damage one byte in the middle of the cached tar.
	benchctlBuildOn(t, tb, tb.Nodes[0], mf, filepath.Join(base, tb.Nodes[0]))
	tar := filepath.Join(image.CacheLayout{Shared: filepath.Join(base, tb.Nodes[0])}.Dir(), key+".tar")
	f, err := os.OpenFile(tar, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	b := make([]byte, 1)
	f.ReadAt(b, st.Size()/2)
	b[0] ^= 0x40
	f.WriteAt(b, st.Size()/2)
	f.Close()

	id, log, err := runPerNodeJob(t, tb, base, mf, "e2e-stream-damaged")
	if err == nil {
		t.Fatalf("the job succeeded with a damaged image:\n%s", log)
	}
	for i, n := range tb.Nodes {
		s := readStatus(t, filepath.Join(base, n), id, fmt.Sprintf("%d-%s", i, n))
		if s.Outcome == runner.OutcomeSuccess || s.ExitCode != 1 || len(s.Benchmarks) > 0 && s.Benchmarks[0].Outcome == runner.OutcomeSuccess {
			t.Errorf("%s: %s exit %d: %s", n, s.Outcome, s.ExitCode, s.Error)
		}
		if i > 0 && !strings.Contains(s.Error, "rank 0") {
			t.Errorf("%s does not name rank 0: %s", n, s.Error)
		}
		if i > 0 {
			if len(imagesWithKey(t, tb, n, key)) != 0 {
				t.Errorf("%s's engine has the image from a damaged stream", n)
			}
		}
	}
}

// distribution: auto where the cache is warm on rank 0 but the shared directory is a folder
// of each node's own: rank 0 sees none of the other nodes' folders in its job folder, so it
// streams the image (from its cache entry) instead of having the workers look for it in a
// cache they cannot see, and says why.
func TestAutoStreamsWhereTheDirectoryIsNotShared(t *testing.T) {
	tb := testbed.Require(t)
	base := tb.FreshDir(t)
	mf := streamManifest(t, "auto", `["/allreduce", "--size", "1M", "--iters", "1", "--warmup", "0"]`)
	key := manifestKey(t, mf)
	removeByKey(t, tb, key)
	benchctlBuildOn(t, tb, tb.Nodes[0], mf, filepath.Join(base, tb.Nodes[0]))
	id, log, err := runPerNodeJob(t, tb, base, mf, "e2e-auto-unshared")
	if err != nil {
		t.Fatalf("job: %v\n%s", err, log)
	}
	for i, n := range tb.Nodes {
		s := readStatus(t, filepath.Join(base, n), id, fmt.Sprintf("%d-%s", i, n))
		if s.Outcome != runner.OutcomeSuccess {
			t.Errorf("%s: %s: %s", n, s.Outcome, s.Error)
		}
	}
	if !strings.Contains(log, "streaming the image, as the shared directory is not shared by every node") ||
		!strings.Contains(log, "rank 0 does not see the node folders of ranks 1 ("+tb.Nodes[1]+"), 2 ("+tb.Nodes[2]+")") {
		t.Errorf("rank 0 did not say why it streamed:\n%s", log)
	}
	if c := strings.Count(log, "image loaded from the stream"); c != len(tb.Nodes)-1 {
		t.Errorf("%d nodes loaded from the stream, want %d:\n%s", c, len(tb.Nodes)-1, log)
	}
	j, err := jobdir.ReadJob(jobdir.Layout{Shared: filepath.Join(base, tb.Nodes[0])}.Job(id, 0).JobFile())
	if err != nil || j.Image.Distribution != "stream" {
		t.Errorf("job.json: distribution %q (%v)", j.Image.Distribution, err)
	}
}

// benchctlBuildOn runs benchctl build of mf on node's engine into the shared directory shared.
func benchctlBuildOn(t *testing.T, tb *testbed.Testbed, node, mf, shared string) {
	t.Helper()
	build := exec.Command(tb.Benchctl(t), "build", "-m", mf, "--shared-dir", shared)
	build.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[node])
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build on %s: %v\n%s", node, err, out)
	}
}

// streamManifest writes an allreduce manifest with distribution dist running command.
func streamManifest(t *testing.T, dist, command string) string {
	t.Helper()
	ex := repoPath(t, "models/allreduce")
	body := fmt.Sprintf(`name: allreduce
image: {dockerfile: %s, context: %s}
gpu: {vendor: none}
container: {network: host}
distribution: %s
benchmarks:
  - {name: allreduce, command: %s, timeout: 5m, results: allreduce.csv}
`, filepath.Join(ex, "Dockerfile"), ex, dist, command)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf
}

// runPerNodeJob runs mf on every node with sbatch --wait, each node with its own shared
// directory base/<node> (nothing shared: the job's secret comes from BENCHCTL_JOB_SECRET,
// as benchctl submit passes it; a node's DOCKER_HOST can be overridden with the file
// base/<node>.docker_host). It returns the job id, the job's output and sbatch's error.
func runPerNodeJob(t *testing.T, tb *testbed.Testbed, base, mf, name string) (string, string, error) {
	t.Helper()
	secret := make([]byte, 32)
	rand.Read(secret)
	script := filepath.Join(t.TempDir(), "job.sh")
	out := filepath.Join(base, "job.out")
	// $SLURMD_NODENAME is expanded by each task's shell, not the batch's. A node whose file
	// base/<node>.docker_host exists talks to the engine it names instead of its own.
	os.WriteFile(script, []byte("#!/bin/sh\nexec srun --ntasks-per-node=1 sh -c '"+
		"h=\"$BENCHCTL_BASE/$SLURMD_NODENAME.docker_host\"; if [ -f \"$h\" ]; then DOCKER_HOST=$(cat \"$h\"); export DOCKER_HOST; fi; "+
		"exec \"$BENCHCTL_BIN\" run --manifest \"$BENCHCTL_MANIFEST\" --shared-dir \"$BENCHCTL_BASE/$SLURMD_NODENAME\" --barrier-timeout 3m'\n"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", "--parsable", "--wait", "-N", fmt.Sprint(len(tb.Nodes)), "--ntasks-per-node=1", "-p", tb.Partition, "-o", out, "-J", name, script)
	cmd.Env = append(tb.Env(), "BENCHCTL_BIN="+tb.Benchctl(t), "BENCHCTL_MANIFEST="+mf, "BENCHCTL_BASE="+base,
		"BENCHCTL_JOB_SECRET="+hex.EncodeToString(secret))
	stdout, err := cmd.Output()
	log, _ := os.ReadFile(out)
	id := strings.TrimSpace(strings.Split(string(stdout), ";")[0])
	if id == "" {
		t.Fatalf("sbatch gave no job id: %v\n%s", err, log)
	}
	return id, string(log), err
}

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
	ex := repoPath(t, "models/allreduce")
	body := fmt.Sprintf(`name: allreduce
image: {dockerfile: %s, context: %s}
gpu: {vendor: none}
container: {network: host}
distribution: stream
benchmarks:
  - {name: allreduce, command: ["/allreduce", "--size", "8M", "--iters", "3", "--warmup", "1"], timeout: 5m, results: allreduce.csv}
`, filepath.Join(ex, "Dockerfile"), ex)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(mf, []byte(body), 0o644)
	removeByKey(t, tb, manifestKey(t, mf)) // every node starts cold

	secret := make([]byte, 32)
	rand.Read(secret)
	script := filepath.Join(t.TempDir(), "job.sh")
	out := filepath.Join(base, "job.out")
	// Each node's own folder: $SLURMD_NODENAME is expanded by each task's shell, not the batch's.
	os.WriteFile(script, []byte("#!/bin/sh\nexec srun --ntasks-per-node=1 sh -c 'exec \"$BENCHCTL_BIN\" run --manifest \"$BENCHCTL_MANIFEST\" --shared-dir \"$BENCHCTL_BASE/$SLURMD_NODENAME\" --barrier-timeout 3m'\n"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", "--parsable", "--wait", "-N", fmt.Sprint(len(tb.Nodes)), "--ntasks-per-node=1", "-p", tb.Partition, "-o", out, "-J", "e2e-stream", script)
	cmd.Env = append(tb.Env(), "BENCHCTL_BIN="+tb.Benchctl(t), "BENCHCTL_MANIFEST="+mf, "BENCHCTL_BASE="+base,
		"BENCHCTL_JOB_SECRET="+hex.EncodeToString(secret))
	stdout, err := cmd.Output()
	log, _ := os.ReadFile(out)
	if err != nil {
		t.Fatalf("job: %v\n%s", err, log)
	}
	id := strings.TrimSpace(strings.Split(string(stdout), ";")[0])
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
			if ents, _ := os.ReadDir(filepath.Join(shared, "cache", "images")); len(ents) != 0 {
				t.Errorf("%s wrote %d cache entries; a streamed image is written nowhere", n, len(ents))
			}
		}
	}
	if c := strings.Count(string(log), "image loaded from the stream"); c != len(tb.Nodes)-1 {
		t.Errorf("%d nodes loaded from the stream, want %d:\n%s", c, len(tb.Nodes)-1, log)
	}
}

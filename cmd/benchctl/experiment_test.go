package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const experimentManifest = `name: x
image: {ref: busybox}
gpu: {vendor: none}
benchmarks: [{name: train, command: [train, "--batch", "{{batch}}"]}]
experiment:
  matrix:
    nodes: [1, 3]
    batch: [16, 32]
  repeat: 2
  warmup: 1
`

// The dry run of rank 2 of a 3-node job lists every variant, its own containers only in
// the variants of 3 nodes (with the parameter in the command and the variant's node
// count), and the trials interleaved.
func TestRunDryRunShowsTheExperiment(t *testing.T) {
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte(experimentManifest), 0o644)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no-docker.sock"))
	t.Setenv("NODE_RANK", "2")
	t.Setenv("NNODES", "3")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("BENCHCTL_JOB_ID", "exp-1")
	code, out, errs := run(t, "run", "--manifest", mf, "--shared-dir", dir, "--dry-run", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var plan struct {
		Containers []string
		Experiment struct {
			Order    string
			Variants []struct {
				ID         string
				Nodes      int
				Containers []string
			}
			Trials []struct {
				Seq, Variant, Trial int
				Warmup              bool
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	x := plan.Experiment
	if len(plan.Containers) != 0 || x.Order != "interleave" || len(x.Variants) != 4 || len(x.Trials) != 12 {
		t.Fatalf("plan: %s", out)
	}
	for _, v := range x.Variants {
		runs := v.Nodes == 3
		if runs != (len(v.Containers) == 1) {
			t.Errorf("variant %s (%d nodes): rank 2's containers %q", v.ID, v.Nodes, v.Containers)
			continue
		}
		if runs {
			batch := strings.TrimPrefix(strings.Split(v.ID, ",")[0], "batch=")
			if c := v.Containers[0]; !strings.Contains(c, "--entrypoint train busybox --batch "+batch) || !strings.Contains(c, "NNODES=3") ||
				!strings.Contains(c, "-e BENCHCTL_PARAM_BATCH="+batch+" ") || !strings.Contains(c, "-e BENCHCTL_VARIANT="+v.ID+" ") ||
				!strings.Contains(c, "-e BENCHCTL_TRIAL=1 ") || !strings.Contains(c, "-e BENCHCTL_WARMUP=true ") || !strings.Contains(c, "--label io.benchctl.trial=") ||
				!strings.Contains(c, "/results/train@") {
				t.Errorf("variant %s: %s", v.ID, c)
			}
		}
	}
	if tr := x.Trials[4]; tr.Seq != 5 || tr.Variant != 0 || tr.Trial != 2 || tr.Warmup {
		t.Errorf("trial 5: %+v", tr)
	}
	code, out, _ = run(t, "run", "--manifest", mf, "--shared-dir", dir, "--dry-run")
	if code != 0 || !strings.Contains(out, "experiment: 4 variants × (1 warmup + 2 measured) trials, order interleave") ||
		!strings.Contains(out, "variant 1: batch=16,nodes=1 on 1 node(s)\n  rank 2 waits") || !strings.Contains(out, "  1. variant 1 trial 1 (warmup)\n") {
		t.Errorf("text plan:\n%s", out)
	}
}

// An experiment whose largest variant needs more nodes than the job has is refused (exit 4)
// before anything is written; submit asks for the largest variant's nodes.
func TestExperimentsThatCannotRun(t *testing.T) {
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte(experimentManifest), 0o644)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no-docker.sock"))
	t.Setenv("NODE_RANK", "0")
	t.Setenv("NNODES", "2")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("BENCHCTL_JOB_ID", "exp-1")
	code, _, errs := run(t, "run", "--manifest", mf, "--shared-dir", dir, "--dry-run")
	if code != exitInvalid || !strings.Contains(errs, "variant batch=16,nodes=3 uses 3 nodes but the job has 2") {
		t.Errorf("dry run on 2 nodes: exit %d\n%s", code, errs)
	}
	os.Unsetenv("NODE_RANK")
	os.Unsetenv("NNODES")
	os.Unsetenv("MASTER_ADDR")
	os.Unsetenv("BENCHCTL_JOB_ID")
	code, _, errs = run(t, "run", "--manifest", mf, "--shared-dir", dir)
	if code != exitInvalid || !strings.Contains(errs, "variant batch=16,nodes=3 uses 3 nodes but the job has 1") {
		t.Errorf("run: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "jobs")); err == nil {
		t.Errorf("run refused the experiment but wrote a job folder")
	}
	code, _, errs = run(t, "submit", "--manifest", mf, "--shared-dir", dir, "--nodes", "2", "--dry-run")
	if code != exitInvalid || !strings.Contains(errs, "--nodes 2 is fewer than the experiment's largest variant uses (nodes: 3") {
		t.Errorf("submit --nodes 2: exit %d\n%s", code, errs)
	}
	code, out, errs := run(t, "submit", "--manifest", mf, "--shared-dir", dir, "--dry-run")
	if code != 0 || !strings.Contains(out, "--nodes=3") {
		t.Errorf("submit --dry-run: exit %d\n%s\n%s", code, out, errs)
	}
}

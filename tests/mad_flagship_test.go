package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// Issue 32's "done when": a checkout laid out as ROCm/MAD's flagship models are
// (tests/fixtures/mad-flagship: run.sh calling helpers by relative paths, one helper moving
// its CSV to ../, one leaving it in the working folder, a setup script whose marker the next
// script checks in its own folder, data.json {"huggingface": {}}) runs on every testbed node
// with `benchctl submit`: each node's rows are its own, collect puts them in one perf.csv
// (dataname filled, provider columns empty, deployment_type slurm), and the checkout, which
// every node shares, is byte for byte as it was. The manifest mounts the checkout at
// /myworkspace as the older docs said to: the workspace takes that place.
//
// Checkout mode (--tags) needs a GPU vendor to pick Dockerfiles, whose GPUs the testbed's
// nodes do not have: it is submitted as a dry run, and each rank's dry run shows its own
// workspace and run directory.
func TestMADFlagshipLayoutOnEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	mad := filepath.Join(tb.FreshDir(t), "MAD") // every node sees it at this path, as a shared checkout
	if out, err := exec.Command("cp", "-a", repoPath(t, "tests/fixtures/mad-flagship"), mad).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	before := treeDigest(t, mad)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(fmt.Sprintf(`name: mad-flagship
gpu: {vendor: none}
image: {buildArgs: {BASE_DOCKER: %q}}
mounts: ["%s:/myworkspace:ro"]
models: {catalog: %s, tags: [flagship], gpuVendor: amd}
`, tb.ShellImage, mad, filepath.Join(mad, "models.json"))), 0o644); err != nil {
		t.Fatal(err)
	}
	n := len(tb.Nodes)
	job := submitOnEveryNode(t, tb, mf, shared)
	vllm, train := "pyt_vllm_tiny-llama", "pyt_train_tiny-llama"
	for rank, d := range nodeDirs(tb) {
		s := readStatus(t, shared, job.JobID, d)
		var names []string
		for _, b := range s.Benchmarks {
			names = append(names, b.Name)
		}
		if s.Outcome != runner.OutcomeSuccess || !slices.Equal(names, []string{vllm, train}) {
			t.Fatalf("%s: %+v", d, s)
		}
		node := job.NodeNamed(d)
		// Each node's CSVs, found where madengine finds them, are its own.
		for _, c := range []struct{ bench, file, row string }{
			{vllm, "perf_Tiny-Llama.csv", fmt.Sprintf("Tiny-Llama,%d,tokens_per_second,32,all,%d", 1000+10*rank, rank)},
			{train, "training_perf.csv", fmt.Sprintf("%s,%d,samples_per_second,%d", train, 500+5*rank, rank)},
		} {
			b, err := os.ReadFile(filepath.Join(node.Results(c.bench), c.file))
			if err != nil || !strings.Contains(string(b), c.row) {
				t.Errorf("%s: %s: %v\n%s\nwant the row %s", d, c.file, err, b, c.row)
			}
		}
		// The vllm helper moved its CSV to ../: the node's workspace, not the checkout; the
		// setup's marker is in the node's own run directory.
		if b, err := os.ReadFile(filepath.Join(node.Workspace(vllm), "perf_Tiny-Llama.csv")); err != nil || !strings.Contains(string(b), fmt.Sprintf(",%d\n", rank)) {
			t.Errorf("%s: the workspace's perf_Tiny-Llama.csv: %v %q", d, err, b)
		}
		if b, err := os.ReadFile(filepath.Join(node.Workspace(train), "run_directory", ".setup_done")); err != nil || string(b) != fmt.Sprintf("set up on rank %d\n", rank) {
			t.Errorf("%s: the setup's marker: %v %q", d, err, b)
		}
		log, _ := os.ReadFile(node.Log(vllm))
		if want := fmt.Sprintf("vllm %s rank %d of %d (slurm) in /myworkspace/run_directory, data 'huggingface' home ''", vllm, rank, n); !strings.Contains(string(log), want) {
			t.Errorf("%s: the log lacks %q:\n%s", d, want, log)
		}
	}
	// One perf.csv: a row per model over every node's rows, the data name without a provider.
	rows := readPerf(t, filepath.Join(job.Path, jobdir.PerfFile))
	if len(rows) != 2 {
		t.Fatalf("perf.csv: %d rows, want 2: %v", len(rows), rows)
	}
	for _, r := range rows {
		want := map[string]string{"dataname": "huggingface", "data_provider_type": "", "data_size": "", "data_download_duration": "",
			"deployment_type": "slurm", "status": "SUCCESS", "perf_nodes": itoa(n)}
		switch r["model"] {
		case "Tiny-Llama":
			want["perf_min"], want["perf_max"] = "1000", itoa(1000+10*(n-1))
		case train:
			want["perf_min"], want["perf_max"] = "500", itoa(500+5*(n-1))
		default:
			t.Errorf("perf.csv: a row of model %q", r["model"])
		}
		for k, v := range want {
			if r[k] != v {
				t.Errorf("perf.csv %s: %s=%q, want %q", r["model"], k, r[k], v)
			}
		}
	}
	if after := treeDigest(t, mad); after != before {
		t.Errorf("the checkout changed:\nbefore %s\nafter  %s", before, after)
	}

	// Checkout mode: the job script runs `benchctl run --tags` in the checkout; each rank's
	// dry run there shows its own workspace and the run directory's copy.
	ctx := filepath.Join(t.TempDir(), "ctx.json")
	os.WriteFile(ctx, []byte(fmt.Sprintf(`{"gpu_vendor": "AMD", "docker_build_arg": {"BASE_DOCKER": %q}}`, tb.ShellImage)), 0o644)
	cmd := exec.Command(tb.Benchctl(t), "submit", "--tags", "flagship", "--context-file", ctx, "--nodes", itoa(n), "--partition", tb.Partition, "--shared-dir", shared, "--dry-run")
	cmd.Dir, cmd.Env = mad, append(tb.Env(), "BENCHCTL_SHARED_DIR=")
	script, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(script), "cd "+mad) || !strings.Contains(string(script), "run --tags flagship --context-file") {
		t.Fatalf("submit --tags --dry-run: %v\n%s", err, script)
	}
	for rank := range n {
		cmd := exec.Command(tb.Benchctl(t), "run", "--tags", "flagship", "--context-file", ctx, "--shared-dir", shared, "--dry-run")
		cmd.Dir = mad
		cmd.Env = append(tb.Env(), "BENCHCTL_SHARED_DIR=", "BENCHCTL_JOB_ID=flagship-dry", "NODE_RANK="+itoa(rank), "NNODES="+itoa(n), "MASTER_ADDR="+tb.Nodes[0])
		plan, err := cmd.Output()
		ws := jobdir.Layout{Shared: shared}.Job("flagship-dry", 0).Nodes()
		if err != nil || strings.Count(string(plan), ":/myworkspace ") != 2 || !strings.Contains(string(plan), mad+":/benchctl/checkout:ro") ||
			!strings.Contains(string(plan), " -w /myworkspace/run_directory ") || !strings.Contains(string(plan), "a copy of scripts/vllm") ||
			!strings.Contains(string(plan), filepath.Join(ws, itoa(rank)+"-")) {
			t.Errorf("rank %d's dry run: %v\n%s", rank, err, plan)
		}
	}
	if after := treeDigest(t, mad); after != before {
		t.Errorf("the checkout changed in checkout mode:\nbefore %s\nafter  %s", before, after)
	}
}

// treeDigest is a digest of a folder's names, types, modes, link targets and contents.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintf(h, "%s\x00", l)
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// A MAD model with a url (a repository served as a file url here) runs on every node in a
// copy of the job's one clone, made by rank 0, with its script folder copied over it; the
// commit is perf.csv's git_commit and job.json's; the checkout is left as it was.
func TestMADURLModelClonedOncePerJob(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	base := tb.FreshDir(t)
	repo := filepath.Join(base, "tiny-repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "model.conf"), []byte("layers=4\n"), 0o644)
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "tiny")
	commit := git("rev-parse", "HEAD")

	mad := filepath.Join(base, "MAD")
	if out, err := exec.Command("cp", "-a", repoPath(t, "tests/fixtures/mad-flagship"), mad).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(mad, "scripts", "urlmodel"), 0o755)
	os.WriteFile(filepath.Join(mad, "scripts", "urlmodel", "run.sh"), []byte(`#!/bin/bash
# Runs in the clone's copy: its model.conf is beside it.
set -eu
layers=$(sed -n 's/^layers=//p' model.conf)
echo "url model in ${PWD##*/} with ${layers} layers on rank ${NODE_RANK}"
printf 'model,performance,metric,node_rank\n%s,%s,samples_per_second,%s\n' "$MAD_MODEL_NAME" $((700 + NODE_RANK)) "$NODE_RANK" >url_perf.csv
`), 0o755)
	os.WriteFile(filepath.Join(mad, "models.json"), []byte(fmt.Sprintf(`[{"name": "pyt_url_tiny", "url": "file://%s", "dockerfile": "docker/pyt_vllm",
 "scripts": "scripts/urlmodel/run.sh", "tags": ["urlmodel"], "multiple_results": "url_perf.csv"}]`, repo)), 0o644)
	before := treeDigest(t, mad)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(mf, []byte(fmt.Sprintf(`name: mad-url
gpu: {vendor: none}
image: {buildArgs: {BASE_DOCKER: %q}}
models: {catalog: %s, tags: [urlmodel], gpuVendor: amd}
`, tb.ShellImage, filepath.Join(mad, "models.json"))), 0o644)
	n := len(tb.Nodes)
	job := submitOnEveryNode(t, tb, mf, shared)
	for rank, d := range nodeDirs(tb) {
		node := job.NodeNamed(d)
		log, _ := os.ReadFile(node.Log("pyt_url_tiny"))
		if want := fmt.Sprintf("url model in tiny-repo with 4 layers on rank %d", rank); !strings.Contains(string(log), want) {
			t.Errorf("%s: the log lacks %q:\n%s", d, want, log)
		}
		if b, err := os.ReadFile(filepath.Join(node.Results("pyt_url_tiny"), "url_perf.csv")); err != nil || !strings.Contains(string(b), fmt.Sprintf(",%d,samples_per_second,%d", 700+rank, rank)) {
			t.Errorf("%s: %v %q", d, err, b)
		}
	}
	clones, _ := os.ReadDir(job.Clones())
	if len(clones) != 1 || !strings.HasPrefix(clones[0].Name(), "tiny-repo-") {
		t.Errorf("clones: %v, want one", clones)
	}
	rows := readPerf(t, filepath.Join(job.Path, jobdir.PerfFile))
	if len(rows) != 1 || rows[0]["git_commit"] != commit || rows[0]["perf_nodes"] != itoa(n) {
		t.Errorf("perf.csv: %v, want git_commit %s", rows, commit)
	}
	if j, _ := os.ReadFile(job.JobFile()); !strings.Contains(string(j), `"commit": "`+commit+`"`) && !strings.Contains(string(j), `"commit":"`+commit+`"`) {
		t.Errorf("job.json lacks the commit:\n%s", j)
	}
	if after := treeDigest(t, mad); after != before {
		t.Error("the checkout changed")
	}
}

// submitOnEveryNode submits the manifest to every testbed node, waits and collects, and
// returns the job's folder; a job that did not succeed fails the test with every log.
func submitOnEveryNode(t *testing.T, tb *testbed.Testbed, mf, shared string) jobdir.Dir {
	t.Helper()
	out, errs, code := submit(t, tb, "--manifest", mf, "--nodes", itoa(len(tb.Nodes)), "--partition", tb.Partition, "--shared-dir", shared, "--wait", "--collect")
	id := strings.TrimSpace(strings.Split(out, "\n")[0])
	if code != 0 || !strings.Contains(out, "SUCCESS") {
		if id != "" {
			logBenchmarkLogs(t, shared, id)
		}
		t.Fatalf("submit: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	return jobdir.Layout{Shared: shared}.Job(id, 0)
}

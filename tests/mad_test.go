package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// A MAD-style model runs as it is on every node: its bash run script, in a copy of its
// folder in the node's own workspace, sees madengine's variables and leaves its CSV in its
// working folder, where madengine finds it; collect reads it.
func TestMADModelSeesMADVariables(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	mad := repoPath(t, "tests/fixtures/mad")
	body := fmt.Sprintf(`name: mad
image: {ref: %s}
gpu: {vendor: none}
mounts: ["%s:/myworkspace:ro"]
models: {catalog: %s, tags: [inference]}
`, tb.ShellImage, mad, filepath.Join(mad, "models.json"))
	mf := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(mf, []byte(body), 0o644)
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	n := len(tb.Nodes)
	for rank, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeSuccess || len(s.Benchmarks) != 1 || s.Benchmarks[0].Name != "echo_infer" {
			t.Fatalf("%s: %+v", d, s)
		}
		csv, err := os.ReadFile(filepath.Join(jobdir.Layout{Shared: shared}.Job(id, 0).NodeNamed(d).Results("echo_infer"), "perf_echo_infer.csv"))
		// madengine's torchrun line (deployment/slurm.py): standalone on one node.
		want := fmt.Sprintf("echo_infer,%d,samples_per_second,%d,\"torchrun --nnodes=%d --nproc_per_node=1 --node_rank=%d --master_addr=", 100+rank, rank, n, rank)
		if n == 1 {
			want = fmt.Sprintf("echo_infer,%d,samples_per_second,%d,\"torchrun --standalone --nproc_per_node=1\"", 100+rank, rank)
		}
		if err != nil || !strings.Contains(string(csv), want) {
			t.Errorf("%s: %v\n%s\nwant a row starting %s", d, err, csv, want)
		}
		log, _ := os.ReadFile(jobdir.Layout{Shared: shared}.Job(id, 0).NodeNamed(d).Log("echo_infer"))
		if !strings.Contains(string(log), "model echo_infer (vendor '') on 0 of 0 GPUs, args: --mode infer") {
			t.Errorf("%s log:\n%s", d, log)
		}
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 || !strings.Contains(cout, "echo_infer") || !strings.Contains(cout, "SUCCESS") {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
}

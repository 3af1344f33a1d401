package tests

import (
	"encoding/json"
	"fmt"
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

// Issue 27's "done when": one MAD checkout with tools, launchers, a scripts/<dir>/models.json
// and a data entry runs on every testbed node, submitted as a madengine user submits it
// (`benchctl submit --tools tracer,prepost,levels --nodes N --wait --collect`), its models
// picked by one tag from both models.json files. On every node: each model's launcher line
// is its launcher's for that node's rank (torchrun named; megatron-lm's torchrun line with
// its parallel sizes), the scripts/<dir> model reads its data set at MAD_DATAHOME, the
// tracer's trace and the pre/post marks are kept in the node's results folder; collect
// lists them in summary.json, perf.csv's tags name the tools and its data columns are filled.
//
// The job runs from a manifest naming the checkout's models.json, as
// TestMADCheckoutDiscoveryAndData does: the testbed's nodes have no GPUs, and a --tags run
// in the checkout must name an AMD or NVIDIA gpu_vendor to pick Dockerfiles, whose GPUs
// these nodes do not have (models.gpuVendor picks only the Dockerfiles).
func TestMADCheckoutParityOnEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	mad := t.TempDir() // a copy: its files are compared with what they were after the job
	if out, err := exec.Command("cp", "-R", repoPath(t, "tests/fixtures/mad-parity")+"/.", mad).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	before := treeDigest(t, mad)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(fmt.Sprintf(`name: mad-parity
gpu: {vendor: none}
image: {buildArgs: {BASE_DOCKER: %q}}
mounts: ["%s:/myworkspace"]
models: {catalog: %s, tags: [parity], gpuVendor: amd}
`, tb.ShellImage, mad, filepath.Join(mad, "models.json"))), 0o644); err != nil {
		t.Fatal(err)
	}
	n := len(tb.Nodes)
	out, errs, code := submit(t, tb, "--manifest", mf, "--tools", "tracer,prepost,levels", "--nodes", itoa(n),
		"--partition", tb.Partition, "--shared-dir", shared, "--wait", "--collect")
	id := strings.TrimSpace(strings.Split(out, "\n")[0])
	if code != 0 || !strings.Contains(out, "parity_dir") || !strings.Contains(out, "parity_root") || !strings.Contains(out, "SUCCESS") {
		if id != "" {
			logBenchmarkLogs(t, shared, id)
		}
		t.Fatalf("submit: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	var addr string
	for rank, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		var names []string
		for _, b := range s.Benchmarks {
			names = append(names, b.Name)
		}
		if s.Outcome != runner.OutcomeSuccess || !slices.Equal(names, []string{"parity_root", "parity_dir_train"}) {
			t.Fatalf("%s: %+v", d, s)
		}
		node := job.NodeNamed(d)
		// The launchers' lines: this node's rank, the job's master, one address for all.
		torchrun := fmt.Sprintf("torchrun --nnodes=%d --nproc_per_node=1 --node_rank=%d --master_addr=", n, rank)
		root, _ := os.ReadFile(node.Log("parity_root"))
		train, _ := os.ReadFile(node.Log("parity_dir_train"))
		for _, c := range []struct {
			log  []byte
			want []string
		}{
			{root, []string{fmt.Sprintf("model parity_root rank %d of %d, args: --from root", rank, n), "launcher torchrun: " + torchrun,
				"mark pre [with space] rank=" + itoa(rank) + " in run_directory\n", "mark post [] rank=" + itoa(rank) + " in run_directory\n"}},
			{train, []string{fmt.Sprintf("model parity_dir/train rank %d of %d, args: --from parity_dir", rank, n),
				"launcher megatron-lm: " + torchrun, fmt.Sprintf("parallel tp=1 pp=%d cp=1", n),
				"data parity_data at /data_dlm_0: parity data set, 42 samples", "tool level 2"}},
		} {
			for _, w := range c.want {
				if !strings.Contains(string(c.log), w) {
					t.Errorf("%s: the log lacks %q:\n%s", d, w, c.log)
				}
			}
		}
		if i := strings.Index(string(train), "--master_addr="); i >= 0 {
			a, _, _ := strings.Cut(string(train)[i:], "\n")
			if addr == "" {
				addr = a
			} else if a != addr {
				t.Errorf("%s: %s, rank 0 had %s", d, a, addr)
			}
		}
		// The tracer's trace, gathered by its post script, and the marks: in the node's folder.
		for _, b := range []string{"parity_root", "parity_dir_train"} {
			res := node.Results(b)
			trace, err := os.ReadFile(filepath.Join(res, "run_directory", "trace_output", "trace.txt"))
			if err != nil || !strings.Contains(string(trace), fmt.Sprintf("tracer start rank=%d in run_directory: ", rank)) ||
				!strings.Contains(string(trace), "tracer end rc=0") {
				t.Errorf("%s %s: trace %v\n%s", d, b, err, trace)
			}
			marks, _ := os.ReadFile(filepath.Join(res, "marks.txt"))
			if !strings.Contains(string(marks), "mark pre [with space] rank="+itoa(rank)) || !strings.Contains(string(marks), "mark post [] rank="+itoa(rank)) {
				t.Errorf("%s %s: marks\n%s", d, b, marks)
			}
		}
	}
	if after := treeDigest(t, mad); after != before { // the tools ran in each node's own run directory
		t.Errorf("the checkout changed: %s, was %s", after, before)
	}

	// collect (submit --collect ran it): the artefacts of every node, the tools, the data.
	var sum struct {
		Benchmarks []struct {
			Name      string
			Tools     []string
			Artefacts []struct {
				Rank  int
				Files []struct{ Path string }
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(job.Path, jobdir.SummaryFile)); err != nil || json.Unmarshal(data, &sum) != nil || len(sum.Benchmarks) != 2 {
		t.Fatalf("summary.json: %v\n%s", err, data)
	}
	for _, b := range sum.Benchmarks {
		if strings.Join(b.Tools, ",") != "tracer,prepost,levels" || len(b.Artefacts) != n {
			t.Errorf("summary.json %s: tools %q, artefacts of %d nodes", b.Name, b.Tools, len(b.Artefacts))
			continue
		}
		for _, a := range b.Artefacts {
			var files []string
			for _, f := range a.Files {
				files = append(files, f.Path)
			}
			d := nodeDirs(tb)[a.Rank]
			for _, w := range []string{"run_directory/trace_output/trace.txt", "run_directory/mark_pre.txt", "run_directory/mark_post.txt", "marks.txt", "perf.csv"} {
				if !slices.Contains(files, "nodes/"+d+"/results/"+b.Name+"/"+w) {
					t.Errorf("summary.json %s, %s: no %s among %q", b.Name, d, w, files)
				}
			}
		}
	}
	sample, err := os.Stat(filepath.Join(mad, "data/parity_data/samples.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows := readPerf(t, job.Output(jobdir.PerfFile))
	var seen []string
	for _, r := range rows {
		seen = append(seen, r["model"])
		want := map[string]string{"status": "SUCCESS", "tags": "parity,tracer,prepost,levels", "launcher": "torchrun",
			"dataname": "", "data_provider_type": "", "data_size": "", "data_download_duration": ""}
		if r["model"] == "parity_dir/train" {
			want = map[string]string{"status": "SUCCESS", "tags": "parity,training,tracer,prepost,levels", "launcher": "megatron-lm",
				"dataname": "parity_data", "data_provider_type": "local", "data_size": fmt.Sprint(sample.Size()), "data_download_duration": "0"}
		}
		for col, v := range want {
			if r[col] != v {
				t.Errorf("perf.csv %s: %s = %q, want %q", r["model"], col, r[col], v)
			}
		}
	}
	if slices.Sort(seen); !slices.Equal(seen, []string{"parity_dir/train", "parity_root"}) {
		t.Errorf("perf.csv models %v", seen)
	}
}

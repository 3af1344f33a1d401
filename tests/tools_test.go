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
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// madengine's tools on every node: a tracer-like tool wraps the command and writes a trace
// into its working directory (madengine's run_directory), which a post script like
// madengine's trace.sh gathers into trace_output and copies to /myworkspace; a pre/post pair
// runs in the tools' directory with its args, a tool's env_vars reach the container; what
// they wrote stays in each node's results folder, nothing in the shared checkout but what
// the post script copied there. A tool whose pre script fails is reported as the tool's
// failure, and the benchmark does not run; post scripts run after a benchmark's failure and
// after its timeout, which stay the benchmark's.
func TestToolsOnEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	work := t.TempDir()
	if out, err := exec.Command("cp", "-R", repoPath(t, "tests/fixtures/tools")+"/.", work).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	os.Chmod(work, 0o777)
	mf := filepath.Join(work, "m.yaml")
	os.WriteFile(mf, []byte(fmt.Sprintf(`name: tools
image: {ref: %s}
gpu: {vendor: none}
mounts: ["%s:/myworkspace"]
tools: [tracer, prepost, envtool]
benchmarks:
- {name: toolbench, command: [bash, bench.sh], workdir: /myworkspace, results: perf.csv}
`, tb.ShellImage, work)), 0o644)
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeSuccess {
			t.Fatalf("%s: %+v", d, s)
		}
		res := job.NodeNamed(d).Results("toolbench")
		trace, err := os.ReadFile(filepath.Join(res, "run_directory", "trace_output", "trace.txt"))
		if err != nil || !strings.Contains(string(trace), "tracer: start bash /myworkspace/bench.sh in run_directory-") || !strings.Contains(string(trace), "tracer: end rc=0") {
			t.Errorf("%s: trace %v\n%s", d, err, trace)
		}
		marks, _ := os.ReadFile(filepath.Join(res, "marks.txt"))
		if !strings.Contains(string(marks), "mark pre [two words] in run_directory-") || !strings.Contains(string(marks), "mark post [] in run_directory-") {
			t.Errorf("%s: marks\n%s", d, marks)
		}
		if _, err := os.Stat(filepath.Join(res, "run_directory", "mark.sh")); err != nil {
			t.Errorf("%s: the tools' directory is not kept: %v", d, err)
		}
		log, _ := os.ReadFile(job.NodeNamed(d).Log("toolbench"))
		if !strings.Contains(string(log), "bench: TOOL_LEVEL=3") {
			t.Errorf("%s: log\n%s", d, log)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(work, "run_directory-*")); len(left) > 0 {
		t.Errorf("tools' directories left in the checkout: %v", left)
	}
	if _, err := os.Stat(filepath.Join(work, "trace.txt")); err == nil {
		t.Error("the tracer wrote into the shared checkout")
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 || !strings.Contains(cout, "toolbench") {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	// collect lists what the tools wrote on every node (summary.json, report.html), and
	// perf.csv's tags name the tools after the benchmark's, in the order they stacked.
	var sum struct {
		Benchmarks []struct {
			Name      string
			Tools     []string
			Artefacts []struct {
				Rank  int
				Files []struct {
					Path, Type string
					Size       int64
				}
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(job.Path, jobdir.SummaryFile)); err != nil || json.Unmarshal(data, &sum) != nil || len(sum.Benchmarks) != 1 {
		t.Fatalf("summary.json: %v\n%s", err, data)
	}
	b := sum.Benchmarks[0]
	if strings.Join(b.Tools, ",") != "tracer,prepost,envtool" || len(b.Artefacts) != len(nodeDirs(tb)) {
		t.Errorf("summary.json: tools %q, artefacts of %d nodes", b.Tools, len(b.Artefacts))
	}
	for i, a := range b.Artefacts {
		var files []string
		for _, f := range a.Files {
			files = append(files, f.Path)
		}
		d := nodeDirs(tb)[i]
		for _, w := range []string{"run_directory/trace_output/trace.txt", "marks.txt", "run_directory/mark.sh", "perf.csv"} {
			if !slices.Contains(files, "nodes/"+d+"/results/toolbench/"+w) {
				t.Errorf("%s: no %s among the artefacts %q", d, w, files)
			}
		}
	}
	report, _ := os.ReadFile(filepath.Join(job.Path, jobdir.ReportFile))
	if !strings.Contains(string(report), `href="nodes/`+nodeDirs(tb)[0]+`/results/toolbench/run_directory/trace_output/trace.txt"`) {
		t.Errorf("report.html does not link the trace")
	}
	perf, err := results.ReadCSVFile(filepath.Join(job.Path, jobdir.PerfFile), 1<<20)
	if err != nil || len(perf.Rows) == 0 {
		t.Fatalf("perf.csv: %v", err)
	}
	if tags := perf.Rows[0][perf.Col("tags")]; !strings.HasSuffix(tags, "tracer,prepost,envtool") {
		t.Errorf("perf.csv tags %q", tags)
	}

	// A failing pre script: the tool's failure, named with its script.
	shared2 := tb.FreshDir(t)
	id, out, err = runJob(t, tb, mf, shared2, true, "--tools", "failpre")
	if err == nil {
		t.Fatalf("a failing pre script passed\n%s", out)
	}
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared2, id, d)
		if len(s.Benchmarks) != 1 || !strings.Contains(s.Benchmarks[0].Error, "tool failpre: pre_scripts scripts/common/pre_scripts/fail.sh 7 exited 7, so the benchmark did not run") {
			t.Errorf("%s: %+v", d, s.Benchmarks)
		}
	}

	// Post scripts after the benchmark failed and after its timeout: both the benchmark's.
	mf2 := filepath.Join(work, "m2.yaml")
	os.WriteFile(mf2, []byte(fmt.Sprintf(`name: tools-fail
image: {ref: %s}
gpu: {vendor: none}
mounts: ["%s:/myworkspace"]
tools: [prepost]
benchmarks:
- {name: failbench, command: [bash, -c, "printf no-newline; exit 3"], workdir: /myworkspace, onFailure: continue}
- {name: slowbench, command: [sleep, "300"], workdir: /myworkspace, timeout: 5s, onFailure: continue}
`, tb.ShellImage, work)), 0o644)
	shared3 := tb.FreshDir(t)
	id, out, err = runJob(t, tb, mf2, shared3, true)
	if err == nil {
		t.Fatalf("a failing benchmark passed\n%s", out)
	}
	job = jobdir.Layout{Shared: shared3}.Job(id, 0)
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared3, id, d)
		if len(s.Benchmarks) != 2 || s.Benchmarks[0].Outcome != runner.OutcomeFailure || strings.Contains(s.Benchmarks[0].Error, "tool") ||
			s.Benchmarks[1].Outcome != runner.OutcomeTimeout || strings.Contains(s.Benchmarks[1].Error, "tool") {
			t.Errorf("%s: %+v", d, s.Benchmarks)
			continue
		}
		for _, b := range []string{"failbench", "slowbench"} {
			marks, _ := os.ReadFile(filepath.Join(job.NodeNamed(d).Results(b), "marks.txt"))
			if !strings.Contains(string(marks), "mark post [] in run_directory-") {
				t.Errorf("%s %s: the post script did not run\n%s", d, b, marks)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(work, "run_directory-*")); len(left) > 0 {
		t.Errorf("tools' directories left in the checkout: %v", left)
	}
}

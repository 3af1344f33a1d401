package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/internal/proctable"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
	"github.com/benchctl/benchctl/workload/process"
)

// processManifest is a manifest of one benchmark, the dummy program run on the node itself
// (runtime: process: no image, no engine), with gpu and extra as given.
func processManifest(t *testing.T, name, gpu string, args []string, extra string) string {
	t.Helper()
	cmd, _ := json.Marshal(append([]string{repoPath(t, "models/dummy/bin/dummy")}, args...))
	body := fmt.Sprintf("name: %s\nruntime: process\ngpu: %s\nbenchmarks:\n  - {name: dummy, command: %s, timeout: 15m, results: dummy.csv}\n%s", name, gpu, cmd, extra)
	p := filepath.Join(t.TempDir(), "benchmark.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// processesOf are the pids of the processes of job id on this machine (every testbed node
// is one), by the marker the process runtime gives them; one that has exited (a zombie
// waiting for its reaper) is not counted.
func processesOf(id string) []int {
	var out []int
	pids, _ := proctable.Pids()
	for _, pid := range pids {
		env := proctable.Getenv(pid, process.MarkerName, process.MarkerLabels)
		var l map[string]string
		if env[process.MarkerName] == "" || json.Unmarshal([]byte(env[process.MarkerLabels]), &l) != nil || l[runner.LabelJob] != id {
			continue
		}
		if _, _, state, ok := proctable.Stat(pid); ok && state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// waitNoProcesses waits (a minute at most: a bound on a hang) until no process of job id is
// left, on each one's pidfd.
func waitNoProcesses(t *testing.T, id string) {
	t.Helper()
	waitAllGone(t, "processes of job "+id, func() []int { return processesOf(id) })
}

// waitAllGone waits (a minute at most: a bound on a hang) until list finds no process, on
// each one's pidfd; what is left then fails t.
func waitAllGone(t *testing.T, what string, list func() []int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for left := list(); len(left) > 0; left = list() {
		for _, pid := range left {
			if !waitExit(pid, time.Until(deadline)) {
				t.Fatalf("%s left: %v", what, left)
			}
		}
	}
}

// waitExit waits up to d for pid to exit, as its pidfd says; true when it did (or was gone).
func waitExit(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(max(d, 0).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// A 3-node Slurm job with runtime: process: every node runs the benchmark as a process of
// its own, with its rank and the GPUs the node gives it (a recorded MI250X tree: two of its
// GPUs, by ROCR_VISIBLE_DEVICES), and collect makes one perf.csv of the three.
func TestProcessRuntimeJob(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := processManifest(t, "proc3", "{vendor: amd, count: 2}", []string{"--rows", "2"}, "")
	id, out, err := runJob(t, tb, mf, shared, true, "--sysfs-root", repoPath(t, "tests/fixtures/sysfs/mi250x"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	for rank, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeSuccess || len(s.Benchmarks) != 1 || s.Benchmarks[0].Outcome != runner.OutcomeSuccess {
			t.Fatalf("%s: %+v", d, s)
		}
		log, _ := os.ReadFile(job.NodeNamed(d).Log("dummy"))
		if !strings.Contains(string(log), fmt.Sprintf("node rank %d of 3", rank)) {
			t.Errorf("%s: the benchmark's log does not say its rank:\n%s", d, log)
		}
		env, _ := os.ReadFile(filepath.Join(job.NodeNamed(d).Results("dummy"), "dummy.csv"))
		if len(env) == 0 {
			t.Errorf("%s: no results", d)
		}
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	rows := readPerf(t, job.Output(jobdir.PerfFile))
	if len(rows) == 0 {
		t.Fatal("no rows in perf.csv")
	}
	for _, r := range rows {
		// dummy's rows depend on the node's rank: each is aggregated over the 3 nodes
		if r["status"] != "SUCCESS" || r["gpus_per_node"] != "2" || r["perf_nodes"] != "3" || r["perf_min"] == r["perf_max"] {
			t.Errorf("perf.csv row %v", r)
		}
	}
	jj, _ := os.ReadFile(job.JobFile())
	if !strings.Contains(string(jj), `"kind": "process"`) {
		t.Errorf("job.json does not say the runtime:\n%s", jj)
	}
	waitNoProcesses(t, id)
}

// Fail fast: rank 2's process fails after 2 s while ranks 0 and 1 would sleep 10 minutes;
// every node ends within 10 s of the failure, and no process of the job is left on any.
func TestProcessRuntimeFailFast(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := processManifest(t, "procfail", "{vendor: none}", []string{"--rows", "1", "--sleep", "600s", "--fail-rank", "2", "--fail-after", "2s", "--exit-code", "1"}, "")
	id, out, err := runJob(t, tb, mf, shared, true)
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	dirs := nodeDirs(tb)
	bad := readStatus(t, shared, id, dirs[2])
	if len(bad.Benchmarks) != 1 || bad.Benchmarks[0].Outcome != runner.OutcomeFailure || bad.Benchmarks[0].FinishedAt == nil {
		t.Fatalf("rank 2: %+v", bad)
	}
	failedAt := *bad.Benchmarks[0].FinishedAt
	for _, d := range dirs {
		s := readStatus(t, shared, id, d)
		if s.FinishedAt == nil {
			t.Fatalf("%s never recorded its end: %+v", d, s)
		}
		if took := s.FinishedAt.Sub(failedAt); took > 10*time.Second {
			t.Errorf("%s ended %v after rank 2's failure (want within 10 s)", d, took)
		}
		if d != dirs[2] && (s.Benchmarks[0].Outcome != runner.OutcomeAborted || s.Benchmarks[0].Diagnostics == "") {
			t.Errorf("%s: %+v", d, s.Benchmarks[0])
		}
	}
	waitNoProcesses(t, id)
}

// scancel mid-benchmark: Slurm's SIGTERM ends every node's process group, and nothing of
// the job is left on any node.
func TestProcessRuntimeScancel(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := processManifest(t, "proccancel", "{vendor: none}", []string{"--rows", "1", "--sleep", "600s"}, "")
	id, out, _ := runJob(t, tb, mf, shared, false)
	waitEveryNode(t, tb, shared, id, "the benchmark never ran on every node", func(_ int, s runner.Status) bool {
		return len(s.Benchmarks) >= 1 && s.Benchmarks[0].Outcome == runner.OutcomeRunning
	})
	deadline := time.Now().Add(time.Minute)
	for len(processesOf(id)) < 3 { // the status says running just before the start
		if time.Now().After(deadline) {
			t.Fatalf("the job's processes: %v\n%s", processesOf(id), out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel := exec.Command("scancel", id)
	cancel.Env = tb.Env()
	if b, err := cancel.CombinedOutput(); err != nil {
		t.Fatalf("scancel: %v %s", err, b)
	}
	waitNoProcesses(t, id)
	waitEveryNode(t, tb, shared, id, "a node never recorded its end", func(_ int, s runner.Status) bool { return s.FinishedAt != nil })
}

// An experiment of 2 variants × 3 trials runs as processes: every trial of every variant
// has its result.
func TestProcessRuntimeExperiment(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := processManifest(t, "procexp", "{vendor: none}", []string{"--rows", "{{rows}}"}, "experiment: {matrix: {rows: [\"1\", \"2\"]}, repeat: 3}\n")
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared, "-o", "json")
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	for _, v := range []string{"rows=1", "rows=2"} {
		if !strings.Contains(cout, v) {
			t.Errorf("collect lacks the variant %s:\n%s", v, cout)
		}
	}
	trials := 0
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		for _, b := range s.Benchmarks {
			if b.Outcome == runner.OutcomeSuccess {
				trials++
			}
		}
	}
	if trials != 3*6 {
		t.Errorf("%d successful trials on the 3 nodes, want %d", trials, 3*6)
	}
	waitNoProcesses(t, id)
}

// A timeout: each node's benchmark is a shell whose group ignores SIGTERM (a child sleeps
// past the 3 s timeout). Diagnostics are taken first and list the group's processes with
// their commands, then SIGTERM and, after the grace, SIGKILL end the group: every node says
// timeout and no process of the job is left.
func TestProcessRuntimeTimeout(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := filepath.Join(t.TempDir(), "benchmark.yaml")
	body := "name: proctimeout\nruntime: process\ngpu: {vendor: none}\nbenchmarks:\n" +
		"  - {name: deaf, command: [/bin/sh, -c, \"trap '' TERM; sleep 601 & sleep 602; wait\"], timeout: 3s}\n"
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	id, out, err := runJob(t, tb, mf, shared, true)
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if len(s.Benchmarks) != 1 {
			t.Fatalf("%s: %+v", d, s)
		}
		b := s.Benchmarks[0]
		if b.Outcome != runner.OutcomeTimeout || !strings.Contains(b.Error, "timed out after 3s") || b.Diagnostics == "" {
			t.Errorf("%s: %+v", d, b)
			continue
		}
		sum, err := os.ReadFile(filepath.Join(job.NodeNamed(d).Diagnostics("deaf"), jobdir.DiagSummaryFile))
		if err != nil || !strings.Contains(string(sum), "processes (") || !strings.Contains(string(sum), "sleep 601") || !strings.Contains(string(sum), "sleep 602") {
			t.Errorf("%s: the diagnostics do not list the process tree: %v\n%s", d, err, sum)
		}
	}
	waitNoProcesses(t, id)
}

// The MAD flagship models as processes on 3 nodes (the catalog's Dockerfiles not built: the
// nodes are the environment): each runs its script from its own run directory in the
// node's workspace, whose links lead into the checkout on the node; the CSVs are found where
// madengine finds them, the checkout is not changed, and collect makes one perf.csv.
func TestProcessRuntimeMADFlagship(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mad := filepath.Join(shared, "MAD") // every node sees it at this path
	if out, err := exec.Command("cp", "-a", repoPath(t, "tests/fixtures/mad-flagship"), mad).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	before := treeDigest(t, mad)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(fmt.Sprintf("name: mad-processes\nruntime: process\ngpu: {vendor: none}\nmodels: {catalog: %s, tags: [flagship], gpuVendor: amd}\n",
		filepath.Join(mad, "models.json"))), 0o644); err != nil {
		t.Fatal(err)
	}
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "pyt_vllm.ubuntu.amd.Dockerfile is not built") {
		t.Errorf("the job's log does not say the catalog's Dockerfile is not built:\n%s", out)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	vllm, train := "pyt_vllm_tiny-llama", "pyt_train_tiny-llama"
	for rank, d := range nodeDirs(tb) {
		node := job.NodeNamed(d)
		for _, c := range []struct{ bench, file, row string }{
			{vllm, "perf_Tiny-Llama.csv", fmt.Sprintf("Tiny-Llama,%d,tokens_per_second,32,all,%d", 1000+10*rank, rank)},
			{train, "training_perf.csv", fmt.Sprintf("%s,%d,samples_per_second,%d", train, 500+5*rank, rank)},
		} {
			b, err := os.ReadFile(filepath.Join(node.Results(c.bench), c.file))
			if err != nil || !strings.Contains(string(b), c.row) {
				t.Errorf("%s: %s: %v\n%s\nwant the row %s", d, c.file, err, b, c.row)
			}
		}
		log, _ := os.ReadFile(node.Log(vllm))
		if want := fmt.Sprintf("vllm %s rank %d of 3 (slurm) in %s", vllm, rank, filepath.Join(node.Workspace(vllm), "run_directory")); !strings.Contains(string(log), want) {
			t.Errorf("%s: the log lacks %q:\n%s", d, want, log)
		}
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	if rows := readPerf(t, job.Output(jobdir.PerfFile)); len(rows) != 2 {
		t.Errorf("perf.csv: %d rows, want 2: %v", len(rows), rows)
	}
	if after := treeDigest(t, mad); after != before {
		t.Errorf("the checkout changed:\nbefore %s\nafter  %s", before, after)
	}
	waitNoProcesses(t, id)
}

// Tools under the process runtime, on 3 nodes: a tool's cmd wraps the benchmark, its pre and
// post scripts run on the node in the tools' directory with their args, its env_vars reach
// the process, and what they wrote is kept in each node's results folder, nothing left in
// the benchmark's working folder (a folder of the user's, shared by the nodes).
func TestProcessRuntimeTools(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	work := filepath.Join(shared, "work") // every node sees it at this path
	if out, err := exec.Command("cp", "-R", repoPath(t, "tests/fixtures/tools"), work).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	mf := filepath.Join(work, "m.yaml")
	if err := os.WriteFile(mf, []byte(fmt.Sprintf("name: tools\nruntime: process\ngpu: {vendor: none}\ntools: [tracer, prepost, envtool]\n"+
		"benchmarks:\n- {name: toolbench, command: [bash, bench.sh], workdir: %s, results: perf.csv}\n", work)), 0o644); err != nil {
		t.Fatal(err)
	}
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	for rank, d := range nodeDirs(tb) {
		res := job.NodeNamed(d).Results("toolbench")
		trace, err := os.ReadFile(filepath.Join(res, "run_directory", "trace_output", "trace.txt"))
		if err != nil || !strings.Contains(string(trace), "tracer: start bash "+filepath.Join(work, "bench.sh")+" in run_directory-") || !strings.Contains(string(trace), fmt.Sprintf("tracer: end rc=0 rank=%d", rank)) {
			t.Errorf("%s: trace %v\n%s", d, err, trace)
		}
		marks, _ := os.ReadFile(filepath.Join(res, "marks.txt"))
		if !strings.Contains(string(marks), "mark pre [two words] in run_directory-") || !strings.Contains(string(marks), "mark post [] in run_directory-") {
			t.Errorf("%s: marks\n%s", d, marks)
		}
		log, _ := os.ReadFile(job.NodeNamed(d).Log("toolbench"))
		if !strings.Contains(string(log), fmt.Sprintf("bench: TOOL_LEVEL=3 rank=%d", rank)) {
			t.Errorf("%s: log\n%s", d, log)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(work, "run_directory-*")); len(left) > 0 {
		t.Errorf("tools' directories left in the working folder: %v", left)
	}
	waitNoProcesses(t, id)
}

// Figures of merit from an MPI program run as processes: on each of 3 nodes, Debian's Open
// MPI (installed on the testbed's nodes) runs the mpi4py ping-pong on 2 ranks; its text
// output becomes figures.csv through the manifest's patterns (the size as the row's key),
// success requires its last line, and collect makes perf.csv rows of each figure and size
// over the 3 nodes.
func TestProcessRuntimeMPIFigures(t *testing.T) {
	tb := testbed.Require(t)
	if _, err := exec.LookPath("mpirun.openmpi"); err != nil {
		t.Fatal("the testbed's nodes have no Open MPI: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	mf := filepath.Join(t.TempDir(), "benchmark.yaml")
	body := fmt.Sprintf(`name: mpi-figures
runtime: process
gpu: {vendor: none}
# each node's mpirun runs its 2 ranks there: not Slurm's allocation (the task inherits it)
env: {OMPI_ALLOW_RUN_AS_ROOT: "1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: "1", OMPI_MCA_btl_vader_single_copy_mechanism: none,
      OMPI_MCA_mpi_yield_when_idle: "1", OMPI_MCA_ras: "^slurm", OMPI_MCA_plm: isolated}
benchmarks:
  - name: pingpong
    command: [mpirun.openmpi, -np, "2", /usr/bin/python3, %s, "50", "8", "1024"]
    timeout: 5m
    figures:
      - {metric: latency_us, pattern: 'pingpong size=(?P<size_bytes>\d+) latency_us=(?P<value>\S+)', unit: us, better: lower, min: 0}
      - {metric: bandwidth_MBps, pattern: 'pingpong size=(?P<size_bytes>\d+) .* bandwidth_MBps=(?P<value>\S+)', unit: MB/s, better: higher}
    success: {require: ['pingpong ranks=2 .* done']}
`, repoPath(t, "tests/fixtures/mpi/pingpong.py"))
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	for _, d := range nodeDirs(tb) {
		csv, err := os.ReadFile(filepath.Join(job.NodeNamed(d).Results("pingpong"), "figures.csv"))
		if err != nil || !strings.HasPrefix(string(csv), "model,performance,metric,unit,size_bytes\n") || strings.Count(string(csv), "\n") != 5 {
			t.Errorf("%s: figures.csv %v:\n%s", d, err, csv)
		}
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	rows := readPerf(t, job.Output(jobdir.PerfFile))
	got := map[string]bool{}
	for _, r := range rows {
		if r["status"] != "SUCCESS" || r["perf_nodes"] != "3" || r["model"] != "pingpong" {
			t.Errorf("perf.csv row %v", r)
		}
		got[r["metric"]+"@"+r["size_bytes"]] = true
	}
	for _, k := range []string{"latency_us@8", "latency_us@1024", "bandwidth_MBps@8", "bandwidth_MBps@1024"} {
		if !got[k] {
			t.Errorf("perf.csv has no row %s: %v", k, got)
		}
	}
	waitNoProcesses(t, id)
}

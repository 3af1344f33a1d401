package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// experimentScript is the benchmark of the experiment test: its value is known from the
// variant's nodes, its batch parameter and the trial (100·nodes + 10·batch + trial); the
// fourth trial of batch=2,nodes=3 is 1000 higher (an outlier), and the third trial of
// batch=1,nodes=2 fails on every node.
const experimentScript = `v=$((100 * NNODES + 10 * BENCHCTL_PARAM_BATCH + BENCHCTL_TRIAL))
if [ "$BENCHCTL_VARIANT" = "batch=2,nodes=3" ] && [ "$BENCHCTL_TRIAL" = 4 ]; then v=$((v + 1000)); fi
if [ "$BENCHCTL_VARIANT" = "batch=1,nodes=2" ] && [ "$BENCHCTL_TRIAL" = 3 ]; then echo "failing on purpose" >&2; exit 1; fi
printf 'model,performance,metric\ntrain,%s,samples_per_second\n' "$v" > "$BENCHCTL_OUTPUT_DIR/r.csv"
`

// An experiment of nodes [1, 2, 3] × batch [1, 2], 3 measured trials after 1 warmup, in one
// 3-node allocation (submit asks for the largest variant's nodes): perf.csv's medians,
// trial counts, intervals and the flagged outlier are exactly right; ranks outside a
// variant ran no container in its trials; the failing trial (onFailure: continue) is
// counted as failed and the others went on.
func TestExperimentAcrossNodeCounts(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	if len(tb.Nodes) < 3 {
		t.Fatalf("the testbed has %d nodes; this test needs 3", len(tb.Nodes))
	}
	shared := tb.FreshDir(t)
	body := fmt.Sprintf(`name: experiment
image: {ref: %q, pull: never}
gpu: {vendor: none}
benchmarks:
  - name: train
    command: ["sh", "-c", %q]
    results: r.csv
    onFailure: continue
telemetry: {interval: 100ms}
experiment:
  matrix: {nodes: [1, 2, 3], batch: [1, 2]}
  repeat: 3
  warmup: 1
`, tb.ShellImage, experimentScript)
	mf := filepath.Join(t.TempDir(), "experiment.yaml")
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := submit(t, tb, "--manifest", mf, "--partition", tb.Partition, "--shared-dir", shared, "--wait", "--collect")
	if code != 3 {
		t.Fatalf("submit --wait: exit %d, want 3 (one trial failed)\n%s\n%s", code, out, errs)
	}
	id := strings.TrimSpace(strings.Split(out, "\n")[0])
	job := jobdir.Layout{Shared: shared}.Job(id, 0)

	// Ranks outside a variant ran nothing in its trials.
	for rank, d := range nodeDirs(tb) {
		st := readStatus(t, shared, id, d)
		runs := 0
		for _, b := range st.Benchmarks {
			nodes, _ := strconv.Atoi(b.Variant[strings.LastIndex(b.Variant, "=")+1:])
			if rank >= nodes {
				t.Errorf("rank %d ran trial %d of %s", rank, b.Trial, b.Variant)
			}
			runs++
		}
		if want := 4 * 2 * (3 - rank); runs != want { // 4 trials of 2 batches per variant it is in
			t.Errorf("rank %d: %d trial runs, want %d", rank, runs, want)
		}
	}

	rows := readPerf(t, job.Output(jobdir.PerfFile))
	if len(rows) != 6 {
		t.Fatalf("perf.csv: %d rows, want 6: %v", len(rows), rows)
	}
	value := func(nodes, batch, trial int) int { return 100*nodes + 10*batch + trial }
	for _, r := range rows {
		nodes, _ := strconv.Atoi(r["param_nodes"])
		batch, _ := strconv.Atoi(r["param_batch"])
		median, trials, failed, status := value(nodes, batch, 3), "3", "0", "SUCCESS"
		low, high := strconv.Itoa(value(nodes, batch, 2)), strconv.Itoa(value(nodes, batch, 4))
		outliers := ""
		switch {
		case nodes == 2 && batch == 1: // trial 3 failed: the median of trials 2 and 4
			trials, failed, status = "2", "1", "FAILURE"
			median = (value(2, 1, 2) + value(2, 1, 4)) / 2
		case nodes == 3 && batch == 2:
			high, outliers = strconv.Itoa(value(3, 2, 4)+1000), "4"
		}
		if r["performance"] != strconv.Itoa(median) || r["nnodes"] != strconv.Itoa(nodes) || r["trials"] != trials || r["failed_trials"] != failed ||
			r["status"] != status || r["perf_ci_low"] != low || r["perf_ci_high"] != high || r["outlier_trials"] != outliers || r["model"] != "train" {
			t.Errorf("variant %s: performance %s over %s trials (%s failed, %s), interval [%s, %s], outliers %q; want %d over %s (%s failed, %s), [%s, %s], %q",
				r["benchctl_variant"], r["performance"], r["trials"], r["failed_trials"], r["status"], r["perf_ci_low"], r["perf_ci_high"], r["outlier_trials"],
				median, trials, failed, status, low, high, outliers)
		}
	}

	checkTelemetryUnavailable(t, tb, job)

	// summary.json has the scaling: batch=1 against one node (its median on 3 nodes is 313,
	// on 1 node 113).
	data, err := os.ReadFile(job.Output(jobdir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s results.Summary
	if err := json.Unmarshal(data, &s); err != nil || s.Experiment == nil {
		t.Fatalf("summary.json: %v", err)
	}
	found := false
	for _, sc := range s.Experiment.Scaling {
		if len(sc.Params) == 1 && sc.Params[0].Value == "1" && len(sc.Points) == 3 {
			found = true
			if p := sc.Points[2]; p.Nodes != 3 || fmt.Sprintf("%.4f", p.Speedup) != fmt.Sprintf("%.4f", 313.0/113) {
				t.Errorf("scaling of batch=1 at 3 nodes: %+v", p)
			}
		}
	}
	if !found {
		t.Errorf("summary.json: no scaling of batch=1 over 3 node counts: %+v", s.Experiment.Scaling)
	}
	if !strings.Contains(out, "BATCH") || !strings.Contains(out, "INTERVAL") {
		t.Errorf("submit --collect's table lacks the parameters:\n%s", out)
	}
}

// A requeued experiment resumes after the trials the first attempt finished: the second
// attempt runs only the rest, its job.json says where the first ones are, and collect of
// the job gives every trial.
func TestRequeuedExperimentResumes(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	// Interleaved: trials 1-2 are batch 1 and 2's first, 3-4 their second, 5-6 their third.
	// In the first attempt trial 4 never ends; the job is requeued while it runs.
	script := `if [ "$BENCHCTL_ATTEMPT" = 0 ] && [ "$BENCHCTL_VARIANT" = "batch=2" ] && [ "$BENCHCTL_TRIAL" = 2 ]; then sleep 600; fi
printf 'model,performance,metric\ntrain,%s,samples_per_second\n' "$((10 * BENCHCTL_PARAM_BATCH + BENCHCTL_TRIAL))" > "$BENCHCTL_OUTPUT_DIR/r.csv"
`
	body := fmt.Sprintf(`name: resume
image: {ref: %q, pull: never}
gpu: {vendor: none}
job: {heartbeat: 1s}
benchmarks:
  - {name: train, command: ["sh", "-c", %q], results: r.csv}
experiment:
  matrix: {batch: [1, 2]}
  repeat: 3
`, tb.ShellImage, script)
	mf := filepath.Join(t.TempDir(), "resume.yaml")
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := submit(t, tb, "--manifest", mf, "--nodes", itoa(len(tb.Nodes)), "--partition", tb.Partition, "--shared-dir", shared, "--requeue")
	if code != 0 {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errs)
	}
	id := strings.TrimSpace(strings.Split(out, "\n")[0])
	t.Cleanup(func() {
		scancel := exec.Command("scancel", id)
		scancel.Env = tb.Env()
		_ = scancel.Run()
		waitJobGone(t, tb, id, 2*time.Minute)
		removeJobContainers(t, tb, id)
	})
	waitEveryNode(t, tb, shared, id, "trial 4 never ran on every node", func(_ int, s runner.Status) bool {
		for _, b := range s.Benchmarks {
			if b.Trial == 4 && b.Outcome == runner.OutcomeRunning {
				return true
			}
		}
		return false
	})
	rq := exec.Command("scontrol", "requeue", id)
	rq.Env = tb.Env()
	if out, err := rq.CombinedOutput(); err != nil {
		t.Fatalf("scontrol requeue: %v %s", err, out)
	}
	waitJobGone(t, tb, id, 6*time.Minute)

	second := jobdir.Layout{Shared: shared}.Job(id, 1)
	j, err := jobdir.ReadJob(second.JobFile())
	if err != nil {
		t.Fatal(err)
	}
	if len(j.TrialSources) != 1 || j.TrialSources[0] != (jobdir.TrialSource{Attempt: 0, First: 1, Last: 3}) {
		t.Errorf("attempt 1's trialSources: %+v, want trials 1-3 from attempt 0", j.TrialSources)
	}
	for _, d := range nodeDirs(tb) {
		st := readStatus(t, shared, id+".1", d)
		var seqs []int
		for _, b := range st.Benchmarks {
			seqs = append(seqs, b.Trial)
		}
		if fmt.Sprint(seqs) != "[4 5 6]" || st.Outcome != runner.OutcomeSuccess {
			t.Errorf("%s in attempt 1: trials %v, outcome %s", d, seqs, st.Outcome)
		}
	}
	collected := collectOutput(t, tb, shared, id)
	rows := readPerf(t, second.Output(jobdir.PerfFile))
	if len(rows) != 2 {
		t.Fatalf("perf.csv: %d rows\n%s", len(rows), collected)
	}
	for _, r := range rows {
		batch, _ := strconv.Atoi(r["param_batch"])
		if r["trials"] != "3" || r["performance"] != strconv.Itoa(10*batch+2) || r["status"] != "SUCCESS" {
			t.Errorf("batch %d: %s trials, performance %s, %s\n%s", batch, r["trials"], r["performance"], r["status"], collected)
		}
	}
}

// checkTelemetryUnavailable: on nodes without GPUs, every run of every node has a telemetry
// summary and series saying so once (the series is its header and one note, however many
// samples the run lasted), the nodes' logs say it once per node, and perf.csv's telemetry
// columns are empty.
func checkTelemetryUnavailable(t *testing.T, tb *testbed.Testbed, job jobdir.Dir) {
	t.Helper()
	for rank, d := range nodeDirs(tb) {
		st := readStatus(t, filepath.Dir(filepath.Dir(job.Path)), job.JobID, d)
		nd := job.NodeNamed(d)
		for _, b := range st.Benchmarks {
			run := jobdir.TrialRunName(b.Name, b.Trial)
			data, err := os.ReadFile(nd.TelemetrySummary(run))
			if err != nil {
				t.Errorf("rank %d, %s: %v", rank, run, err)
				continue
			}
			var sum jobdir.TelemetrySummary
			if err := json.Unmarshal(data, &sum); err != nil || len(sum.GPUs) != 0 || len(sum.Unavailable) != 1 ||
				!strings.Contains(sum.Unavailable[0].Why, "without GPUs") || sum.Samples != 0 {
				t.Errorf("rank %d, %s: telemetry summary %s (%v)", rank, run, data, err)
			}
			series, err := os.ReadFile(nd.Telemetry(run))
			if n := strings.Count(string(series), "\n"); err != nil || n != 2 {
				t.Errorf("rank %d, %s: the series has %d lines, want the header and one note (%v):\n%s", rank, run, n, err, series)
			}
		}
	}
	logs := ""
	for _, f := range []string{job.SbatchOut(), filepath.Join(job.Path, jobdir.SbatchErrFile)} {
		data, _ := os.ReadFile(f)
		logs += string(data)
	}
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "telemetry") {
			n++
		}
	}
	if n != len(tb.Nodes) {
		t.Errorf("%d lines of the nodes' logs mention telemetry, want one per node (%d):\n%s", n, len(tb.Nodes), logs)
	}
	for _, r := range readPerf(t, job.Output(jobdir.PerfFile)) {
		if r["energy_j"] != "" || r["avg_power_w"] != "" || r["throttled"] != "" {
			t.Errorf("variant %s: telemetry columns without GPUs: %q %q %q", r["benchctl_variant"], r["energy_j"], r["avg_power_w"], r["throttled"])
		}
	}
}

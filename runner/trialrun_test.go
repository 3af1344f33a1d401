package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

const trialsBody = `benchmarks:
- {name: b, command: [/b, "{{batch}}"], results: "r{{batch}}.csv"}
experiment:
  matrix: {batch: [16, 32]}
  repeat: 2
  warmup: 1
  order: sequential
`

// A one-node experiment runs every trial in the plan's order: one record per trial with its
// variant and numbers, its own files (b@<trial>), and the trial's variables in the container.
func TestRunWalksTheTrials(t *testing.T) {
	eng := &runEngine{}
	r := runLocalOf(t, eng, trialsBody, nil)
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if len(r.st.Benchmarks) != 6 {
		t.Fatalf("status.json and the trial log: %d records, want 6 trials: %+v", len(r.st.Benchmarks), r.st.Benchmarks)
	}
	// The records are in the trial log, one line each; status.json keeps none of them.
	if r.raw == nil || len(r.raw.Benchmarks) != 0 || r.raw.Trials != 6 {
		t.Errorf("status.json itself: %+v", r.raw)
	}
	want := []string{"1 batch=16 1 true", "2 batch=16 2 false", "3 batch=16 3 false", "4 batch=32 1 true", "5 batch=32 2 false", "6 batch=32 3 false"}
	for i, b := range r.st.Benchmarks {
		got := fmt.Sprintf("%d %s %d %v", b.Trial, b.Variant, b.VariantTrial, b.Warmup)
		if got != want[i] || b.Outcome != OutcomeSuccess || b.Log != jobdir.LogName(jobdir.TrialRunName("b", b.Trial)) {
			t.Errorf("record %d: %s (%+v), want %s", i, got, b, want[i])
		}
	}
	nd := r.res.NodeDir
	for seq := 1; seq <= 6; seq++ {
		if fi, err := os.Stat(jobdir.NodeDir{Path: nd}.Results(jobdir.TrialRunName("b", seq))); err != nil || !fi.IsDir() {
			t.Errorf("trial %d's results folder: %v", seq, err)
		}
	}
	if len(eng.envs) != 6 {
		t.Fatalf("%d containers, want 6", len(eng.envs))
	}
	for _, kv := range []string{"BENCHCTL_PARAM_BATCH=32", "BENCHCTL_VARIANT=batch=32", "BENCHCTL_TRIAL=3", "BENCHCTL_WARMUP=false", "NNODES=1"} {
		if !slices.Contains(eng.envs[5], kv) {
			t.Errorf("the last trial's container lacks %s: %v", kv, eng.envs[5])
		}
	}
	if !slices.Contains(eng.envs[0], "BENCHCTL_WARMUP=true") {
		t.Errorf("the first trial is a warmup: %v", eng.envs[0])
	}
}

// A failing trial of a one-node job (onFailure: continue, the default on one node) is
// recorded and the others still run; the node fails (exit 3) naming the failed trials.
func TestRunFailedTrialsGoOn(t *testing.T) {
	eng := &runEngine{exit: 1}
	r := runLocalOf(t, eng, trialsBody, nil)
	var re *RunError
	if !errors.As(r.err, &re) || re.ExitCode() != 3 || !strings.Contains(re.Msg, "6 of 6 trial runs failed") || !strings.Contains(re.Msg, "and 1 more") {
		t.Fatalf("Run: %v", r.err)
	}
	if len(r.st.Benchmarks) != 6 || r.st.Outcome != OutcomeFailure {
		t.Errorf("status.json: %s, %d records", r.st.Outcome, len(r.st.Benchmarks))
	}
}

// A requeued job with an experiment resumes after the trials the previous attempt finished
// on every rank (a trial cut short is run again) and records where they are in job.json.
func TestRequeuedExperimentResumes(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	slurmEnv := func(restart string) map[string]string {
		return map[string]string{"SLURM_JOB_ID": "77", "SLURM_RESTART_COUNT": restart, "SLURM_JOB_NUM_NODES": "1", "SLURM_NTASKS": "1",
			"SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n1", "SLURMD_NODENAME": "n1"}
	}
	// Attempt 0: trials 1 to 3 ended (the third failed: it still ended), trial 4 was cut
	// short by the requeue.
	prev := jobdir.Layout{Shared: shared}.Job("77", 0)
	jobdirtest.Job(t, prev, jobdirtest.NewJob(t, "77", []string{"n1"}, nil))
	st := &jobdir.Status{Version: 1, Rank: 0, Host: "n1", World: 1, Outcome: OutcomeRunning}
	for seq, out := range []string{OutcomeSuccess, OutcomeSuccess, OutcomeFailure, OutcomeRunning} {
		st.Benchmarks = append(st.Benchmarks, jobdir.BenchmarkStatus{Name: "b", Trial: seq + 1, Outcome: out})
	}
	jobdirtest.Status(t, prev.Node(0, "n1"), st)

	eng := &runEngine{}
	r := runNodeOf(t, eng, trialsBody, slurmEnv("1"), dir, nil)
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, r.log)
	}
	var seqs []int
	for _, b := range r.st.Benchmarks {
		seqs = append(seqs, b.Trial)
	}
	if !slices.Equal(seqs, []int{4, 5, 6}) || len(eng.envs) != 3 {
		t.Errorf("attempt 1 ran trials %v (%d containers), want 4, 5, 6", seqs, len(eng.envs))
	}
	j, err := jobdir.ReadJob(jobdir.Layout{Shared: shared}.Job("77", 1).JobFile())
	if err != nil {
		t.Fatal(err)
	}
	if want := []jobdir.TrialSource{{Attempt: 0, First: 1, Last: 3}}; !slices.Equal(j.TrialSources, want) {
		t.Errorf("job.json trialSources %+v, want %+v", j.TrialSources, want)
	}
	if !strings.Contains(r.log, "resuming after the trials an earlier attempt finished") {
		t.Errorf("the log does not say it resumed:\n%s", r.log)
	}
}

// A previous attempt planted by another user (its folder theirs) marks nothing done: every
// trial runs again.
func TestAPlantedPreviousAttemptIsNotResumedFrom(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test plants another user's folder: it runs as root (CI does)")
	}
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	prev := jobdir.Layout{Shared: shared}.Job("78", 0)
	jobdirtest.Job(t, prev, jobdirtest.NewJob(t, "78", []string{"n1"}, nil))
	st := &jobdir.Status{Version: 1, Rank: 0, Host: "n1", World: 1, Outcome: OutcomeSuccess}
	for seq := 1; seq <= 6; seq++ {
		st.Benchmarks = append(st.Benchmarks, jobdir.BenchmarkStatus{Name: "b", Trial: seq, Outcome: OutcomeSuccess})
	}
	jobdirtest.Status(t, prev.Node(0, "n1"), st)
	filepath.Walk(prev.Path, func(p string, _ os.FileInfo, err error) error { return os.Lchown(p, 4242, 4242) })
	eng := &runEngine{}
	r := runNodeOf(t, eng, trialsBody, map[string]string{"SLURM_JOB_ID": "78", "SLURM_RESTART_COUNT": "1", "SLURM_JOB_NUM_NODES": "1", "SLURM_NTASKS": "1",
		"SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n1", "SLURMD_NODENAME": "n1"}, dir, nil)
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, r.log)
	}
	if len(eng.envs) != 6 || !strings.Contains(r.log, "the previous attempt's folder is another user's") {
		t.Errorf("%d containers, want all 6 trials run again:\n%s", len(eng.envs), r.log)
	}
}

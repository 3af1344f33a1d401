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
	"github.com/benchctl/benchctl/manifest"
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
	// The plan is in job.json, where the other ranks, a requeued attempt and collect read it.
	j, err := jobdir.ReadJob(filepath.Join(filepath.Dir(filepath.Dir(nd)), jobdir.JobFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 0, 0, 1, 1, 1}; !slices.Equal(j.TrialOrder, want) {
		t.Errorf("job.json trialOrder %v, want %v", j.TrialOrder, want)
	}
}

// A requeued attempt goes on with the plan its previous attempt wrote in job.json, not the
// one this build would make: here the previous attempt ran batch=32's trials first, so the
// trials 4 to 6 left to run are batch=16's (the manifest's sequential order would make
// them batch=32's).
func TestARequeuedAttemptKeepsThePreviousPlan(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	env := map[string]string{"SLURM_JOB_ID": "78", "SLURM_RESTART_COUNT": "1", "SLURM_JOB_NUM_NODES": "1", "SLURM_NTASKS": "1",
		"SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n1", "SLURMD_NODENAME": "n1"}
	prev := jobdir.Layout{Shared: shared}.Job("78", 0)
	pj := jobdirtest.NewJob(t, "78", []string{"n1"}, nil)
	pj.TrialOrder = []int{1, 1, 1, 0, 0, 0}
	jobdirtest.Job(t, prev, pj)
	st := &jobdir.Status{Version: 1, Rank: 0, Host: "n1", World: 1, Outcome: OutcomeRunning}
	for seq := 1; seq <= 3; seq++ {
		st.Benchmarks = append(st.Benchmarks, jobdir.BenchmarkStatus{Name: "b", Trial: seq, Outcome: OutcomeSuccess})
	}
	jobdirtest.Status(t, prev.Node(0, "n1"), st)

	eng := &runEngine{}
	r := runNodeOf(t, eng, trialsBody, env, dir, nil)
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, r.log)
	}
	if len(eng.envs) != 3 {
		t.Fatalf("%d containers, want 3", len(eng.envs))
	}
	for i, e := range eng.envs {
		if !slices.Contains(e, "BENCHCTL_PARAM_BATCH=16") {
			t.Errorf("resumed trial %d is not batch=16's: %v", i+4, e)
		}
	}
	j, err := jobdir.ReadJob(jobdir.Layout{Shared: shared}.Job("78", 1).JobFile())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(j.TrialOrder, pj.TrialOrder) {
		t.Errorf("attempt 1's trialOrder %v, want the previous %v", j.TrialOrder, pj.TrialOrder)
	}
}

// A rank other than 0 reads the plan from job.json and never makes one: a job.json without
// one, or with one that does not fit the experiment, fails the node saying where.
func TestAWorkerReadsThePlanFromJobJSON(t *testing.T) {
	x := &manifest.Experiment{Repeat: 2, Warmup: 1, Order: manifest.OrderSequential, Variants: []manifest.Variant{{ID: "batch=16"}, {ID: "batch=32"}}}
	dir := jobdir.Layout{Shared: t.TempDir()}.Job("79", 0)
	r := &nodeRun{node: Node{JobID: "79", Rank: 1, World: 2}, dir: dir}
	for _, c := range []struct {
		order []int
		want  string
	}{
		{[]int{1, 0, 1, 0, 1, 0}, ""},
		{nil, "0 trials, but the experiment has 2 variants of 3 trials each"},
		{[]int{1, 1, 1, 1, 0, 0}, "variant 1 has more than its 3 trials"},
		{[]int{0, 0, 0, 1, 1, -1}, "trial 6 is of variant -1"},
	} {
		j := jobdirtest.NewJob(t, "79", []string{"n1", "n2"}, nil)
		j.TrialOrder = c.order
		jobdirtest.Job(t, dir, j)
		plan, err := r.trialPlan(x)
		if c.want == "" {
			if err != nil || len(plan) != 6 || plan[0].Variant != 1 || plan[1].Variant != 0 || plan[4].N != 3 || !plan[0].Warmup || plan[2].Warmup {
				t.Errorf("%v: %+v, %v", c.order, plan, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir.JobFile()) {
			t.Errorf("%v: %v, want %q", c.order, err, c.want)
		}
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

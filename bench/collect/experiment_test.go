package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchctl/benchctl/bench/collect/synth"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/collect"
)

// A synthetic experiment is what collect reads as one: every benchmark, variant and row
// key is a row over the variant's measured trials (warmups listed, never counted), and its
// median is the variant's scale of the row's base value; a trial in which one node timed
// out is counted as failed, the others are the row's values.
func TestSyntheticExperimentCollects(t *testing.T) {
	shared := t.TempDir()
	o := synth.Options{JobID: "9000002", Nodes: 6, Rows: 2, Seed: 1, Variants: 3, Trials: 2, Warmup: 1, FailTrialEvery: 4}
	if _, err := synth.WriteJob(shared, o); err != nil {
		t.Fatal(err)
	}
	col, err := collect.Collect(context.Background(), collect.CollectOptions{SharedDir: shared, JobID: o.JobID, Attempt: -1})
	if err != nil {
		t.Fatal(err)
	}
	x := col.Summary.Experiment
	if x == nil || len(x.Variants) != 3 || x.Repeat != 2 || x.Warmup != 1 {
		t.Fatalf("experiment: %+v", x)
	}
	if len(x.Rows) != 3*2 {
		t.Fatalf("%d experiment rows, want 6 (3 variants × 2 row keys): %+v", len(x.Rows), x.Rows)
	}
	// Interleaved, 9 trials: seq 4 is batch=1's second, seq 8 batch=2's third (both measured).
	failed := map[string]int{"batch=1": 1, "batch=2": 1, "batch=3": 0}
	for _, r := range x.Rows {
		if f := failed[r.Variant]; r.Stats.Trials != 2-f || r.Failed != f || len(r.Trials) != 3 || !r.Trials[0].Warmup {
			t.Errorf("%s %s: %d measured trials, %d failed, %d listed (first warmup %v); want %d, %d, 3 (true)",
				r.Variant, r.Model, r.Stats.Trials, r.Failed, len(r.Trials), len(r.Trials) > 0 && r.Trials[0].Warmup, 2-f, f)
		}
		var v, i int
		if _, err := fmt.Sscanf(r.Variant, "batch=%d", &v); err != nil {
			t.Fatalf("variant %q: %v", r.Variant, err)
		}
		if _, err := fmt.Sscanf(r.Model, "bench0_%d", &i); err != nil {
			t.Fatalf("model %q: %v", r.Model, err)
		}
		want := float64(v * 1000 * (i + 1))
		if math.Abs(r.Stats.Median-want) > 0.1*want {
			t.Errorf("%s %s: median %v, want about %v", r.Variant, r.Model, r.Stats.Median, want)
		}
	}
}

// A node of thousands of trials collects every one of them (its records streamed from the
// trial log) while its status.json keeps a few hundred bytes: before the trial log, a
// node's status.json grew by a record per trial and, past about 34,500 trials, collect
// refused it and read every trial as FAILURE although every result was on disk.
func TestManyTrialsOfOneNodeCollect(t *testing.T) {
	shared := t.TempDir()
	o := synth.Options{JobID: "9000003", Nodes: 1, Rows: 1, Seed: 2, Variants: 2, Trials: 1000}
	if _, err := synth.WriteJob(shared, o); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(shared, "jobs", o.JobID, "nodes", "0-"+synth.Host(0), "status.json"))
	if err != nil || st.Size() > 4096 {
		t.Fatalf("status.json: %v, %d bytes", err, st.Size())
	}
	col, err := collect.Collect(context.Background(), collect.CollectOptions{SharedDir: shared, JobID: o.JobID, Attempt: -1})
	if err != nil {
		t.Fatal(err)
	}
	x := col.Summary.Experiment
	if x == nil || len(x.Rows) != 2 {
		t.Fatalf("experiment: %+v", x)
	}
	for _, r := range x.Rows {
		if r.Stats.Trials != 1000 || r.Failed != 0 || r.Status != results.StatusSuccess {
			t.Errorf("%s: %d trials, %d failed, %s", r.Variant, r.Stats.Trials, r.Failed, r.Status)
		}
	}
}

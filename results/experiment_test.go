package results

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results/stats"
)

// experimentJob writes the folder of a 3-node job whose experiment is nodes [1, 2, 3] ×
// batch [16, 32], repeat 3 after 1 warmup: every rank of a trial's variant wrote
// value(nodes, batch, trial) samples_per_second, except the trials fail says failed (no
// result). Ranks outside a variant have no record of its trials, as a run leaves them.
func experimentJob(t *testing.T, value func(nodes, batch, trial int) float64, fail func(nodes, batch, trial int) bool) jobdir.Dir {
	t.Helper()
	return experimentAttempt(t, jobdir.Layout{Shared: t.TempDir()}.Job("900", 0), value, fail, nil, nil)
}

// experimentAttempt writes one attempt's folder of experimentJob's job: only the trials
// keep says (all: nil), with job.json's trialSources.
func experimentAttempt(t *testing.T, dir jobdir.Dir, value func(nodes, batch, trial int) float64, fail func(nodes, batch, trial int) bool,
	keep func(seq int) bool, sources []jobdir.TrialSource) jobdir.Dir {
	t.Helper()
	return experimentInOrder(t, dir, value, fail, keep, sources, nil)
}

// experimentInOrder is experimentAttempt whose nodes walked the plan of order (job.json's
// trialOrder) rather than the interleaved one its experiment says; nil: the interleaved
// plan, and no trialOrder in job.json (as written before it).
func experimentInOrder(t *testing.T, dir jobdir.Dir, value func(nodes, batch, trial int) float64, fail func(nodes, batch, trial int) bool,
	keep func(seq int) bool, sources []jobdir.TrialSource, order []int) jobdir.Dir {
	t.Helper()
	hosts := []string{"h0", "h1", "h2"}
	je := &jobdir.JobExperiment{Params: []string{"batch", "nodes"}, Repeat: 3, Warmup: 1, Order: manifest.OrderInterleave}
	x := &manifest.Experiment{Repeat: 3, Warmup: 1, Order: manifest.OrderInterleave}
	for _, n := range []int{1, 2, 3} {
		for _, b := range []int{16, 32} {
			id := fmt.Sprintf("batch=%d,nodes=%d", b, n)
			je.Variants = append(je.Variants, jobdir.JobVariant{ID: id, Nodes: n,
				Params: []jobdir.JobParam{{Name: "batch", Value: strconv.Itoa(b)}, {Name: "nodes", Value: strconv.Itoa(n)}}})
			x.Variants = append(x.Variants, manifest.Variant{ID: id, Nodes: n})
		}
	}
	m := jobdir.JobManifest{Name: "exp", Benchmarks: []jobdir.JobBenchmark{{Name: "train", Results: "r.csv"}}, Experiment: je}
	j := jobdirtest.NewJob(t, dir.JobID, hosts, m)
	j.Attempt, j.TrialSources, j.TrialOrder = dir.Attempt, sources, order
	d := jobdirtest.Job(t, dir, j)
	plan := x.Plan(0)
	if order != nil {
		var err error
		if plan, err = x.PlanOf(order); err != nil {
			t.Fatal(err)
		}
	}
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for rank, host := range hosts {
		nd := d.Node(rank, host)
		st := &jobdir.Status{Version: 1, Rank: rank, Host: host, World: 3, Outcome: jobdir.OutcomeSuccess, FinishedAt: &end}
		for _, tr := range plan {
			v := je.Variants[tr.Variant]
			if rank >= v.Nodes || (keep != nil && !keep(tr.Seq)) {
				continue
			}
			batch, _ := strconv.Atoi(v.Params[0].Value)
			rec := jobdir.BenchmarkStatus{Name: "train", Outcome: jobdir.OutcomeSuccess, DurationSeconds: 1, Trial: tr.Seq, Variant: v.ID, VariantTrial: tr.N, Warmup: tr.Warmup}
			if fail(v.Nodes, batch, tr.N) {
				rec.Outcome, rec.ExitCode, rec.Error = jobdir.OutcomeFailure, 1, "exit 1"
				st.Outcome = jobdir.OutcomeFailure
			} else {
				jobdirtest.Result(t, nd, jobdir.TrialRunName("train", tr.Seq), "r.csv",
					fmt.Appendf(nil, "model,performance,metric\ntrain,%v,samples_per_second\n", value(v.Nodes, batch, tr.N)))
			}
			st.Benchmarks = append(st.Benchmarks, rec)
		}
		jobdirtest.Status(t, nd, st)
	}
	return d
}

// variantRow is one of experimentJob's perf.csv rows, with its variant's parameters.
type variantRow struct {
	nodes, batch int
	row          map[string]string
}

// variantRows are experimentJob's perf.csv rows, one per variant (six).
func variantRows(t *testing.T, s *Summary) []variantRow {
	t.Helper()
	rows := perfRows(t, s)
	if len(rows) != 6 {
		t.Fatalf("%d perf.csv rows, want 6", len(rows))
	}
	out := make([]variantRow, len(rows))
	for i, r := range rows {
		out[i].row = r
		out[i].nodes, _ = strconv.Atoi(r["param_nodes"])
		out[i].batch, _ = strconv.Atoi(r["param_batch"])
	}
	return out
}

// perfRows reads perf.csv's rows as maps by column.
func perfRows(t *testing.T, s *Summary) []map[string]string {
	t.Helper()
	data, err := EncodeCSV(PerfTable(s))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// The trials of a known benchmark reduce to exactly the right medians, counts, intervals
// and outliers; a failed trial is counted as failed while the others count; ranks outside
// a variant are neither failed nor missing; scaling is against one node.
func TestCollectAnExperiment(t *testing.T) {
	value := func(nodes, batch, trial int) float64 {
		v := float64(100*nodes + batch + trial)
		if nodes == 3 && batch == 32 && trial == 4 {
			v += 1000 // an outlier
		}
		return v
	}
	fail := func(nodes, batch, trial int) bool { return nodes == 2 && batch == 16 && trial == 3 }
	d := experimentJob(t, value, fail)
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	x := s.Experiment
	if x == nil || len(x.Rows) != 6 || len(x.Variants) != 6 {
		t.Fatalf("experiment: %+v", x)
	}
	for _, f := range s.NodeFailures {
		if !strings.Contains(f.Reason, "train@") && f.Outcome != jobdir.OutcomeFailure {
			t.Errorf("node failure %+v", f)
		}
	}
	for _, vr := range variantRows(t, s) {
		nodes, batch, r := vr.nodes, vr.batch, vr.row
		want := value(nodes, batch, 3) // the median of trials 2, 3, 4
		trials, failed := "3", "0"
		if nodes == 2 && batch == 16 {
			want, trials, failed = (value(2, 16, 2)+value(2, 16, 4))/2, "2", "1"
		}
		if r["performance"] != stats.FormatStat(want) || r["nnodes"] != strconv.Itoa(nodes) || r["trials"] != trials || r["failed_trials"] != failed ||
			r["benchctl_variant"] != fmt.Sprintf("batch=%d,nodes=%d", batch, nodes) || r["model"] != "train" || r["metric"] != "samples_per_second" {
			t.Errorf("row %v: want performance %v over %s trials (%s failed)", r, want, trials, failed)
		}
		// Three trials: the interval is the smallest and the largest, covering 75 %.
		if trials == "3" && (r["perf_ci_low"] != stats.FormatStat(value(nodes, batch, 2)) || r["perf_ci_high"] != stats.FormatStat(value(nodes, batch, 4)) || r["perf_ci_coverage"] != "0.75") {
			t.Errorf("row %s: interval [%s, %s] at %s", r["benchctl_variant"], r["perf_ci_low"], r["perf_ci_high"], r["perf_ci_coverage"])
		}
		wantOut := ""
		if nodes == 3 && batch == 32 {
			wantOut = "4"
		}
		if r["outlier_trials"] != wantOut || (failed == "1") != (r["status"] == StatusFailure) {
			t.Errorf("row %s: outliers %q status %s", r["benchctl_variant"], r["outlier_trials"], r["status"])
		}
		if r["benchctl_winner"] != "" {
			t.Errorf("an experiment row names a winner: %q", r["benchctl_winner"])
		}
	}
	// No failure is reported for ranks 1 and 2 in the one-node variants' trials.
	for _, b := range s.Benchmarks {
		if b.Variant == "batch=16,nodes=1" && (b.Status != StatusSuccess || len(b.Failed) != 0) {
			t.Errorf("trial %s of a one-node variant: %s %s %+v", b.Name, b.Status, b.Reason, b.Failed)
		}
	}
	// Scaling of batch=32 against one node: medians 133, 235, 1335 (the outlier trial is
	// the largest of three, so the median stays 335).
	var sc *ScalingSummary
	for i := range x.Scaling {
		if len(x.Scaling[i].Params) == 1 && x.Scaling[i].Params[0].Value == "32" {
			sc = &x.Scaling[i]
		}
	}
	if sc == nil || len(sc.Points) != 3 || sc.Better != HigherIsBetter || !sc.Guessed {
		t.Fatalf("scaling: %+v", x.Scaling)
	}
	if p := sc.Points[2]; p.Nodes != 3 || !near(p.Speedup, 335.0/135) || !near(p.Efficiency, 335.0/135/3) {
		t.Errorf("3 nodes: %+v", p)
	}
	if math.IsNaN(sc.Intervals[0][0]) {
		t.Errorf("intervals %v", sc.Intervals)
	}
	// The table shows the parameters, the trials and the interval; no winner.
	var buf strings.Builder
	if err := WriteRows(&buf, false, s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "BENCHMARK MODEL METRIC KEY BATCH NODES TRIALS MEDIAN INTERVAL CV OUTLIERS STATUS NOTE" {
		t.Errorf("header %q", lines[0])
	}
	if !strings.Contains(buf.String(), "train      train  samples_per_second  -    32     3      3              335     334 to 1336 (75%)  86.5%  trial 4") ||
		!strings.Contains(buf.String(), "trial 4") || !strings.Contains(buf.String(), "2 (+1 failed)") || strings.Contains(buf.String(), "WINNER") {
		t.Errorf("table:\n%s", buf.String())
	}
}

// A requeued job that resumed after trial 12 is collected whole: trials 1 to 12 from the
// first attempt's folder, the others from its own, and its nodes counted once.
func TestCollectAResumedExperiment(t *testing.T) {
	value := func(nodes, batch, trial int) float64 { return float64(100*nodes + batch + trial) }
	never := func(int, int, int) bool { return false }
	layout := jobdir.Layout{Shared: t.TempDir()}
	experimentAttempt(t, layout.Job("901", 0), value, never, func(seq int) bool { return seq <= 14 }, nil)
	d := experimentAttempt(t, layout.Job("901", 1), value, never, func(seq int) bool { return seq > 12 },
		[]jobdir.TrialSource{{Attempt: 0, First: 1, Last: 12}})
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes.Reported != 3 || s.Status != StatusSuccess {
		t.Errorf("nodes %+v, status %s, problems %v", s.Nodes, s.Status, s.Problems)
	}
	for _, r := range s.Experiment.Rows {
		if r.Stats.Trials != 3 || r.Stats.Median != value(r.Nodes, 16, 3) && r.Stats.Median != value(r.Nodes, 32, 3) {
			t.Errorf("variant %s: %d trials, median %v", r.Variant, r.Stats.Trials, r.Stats.Median)
		}
	}
	for _, b := range s.Benchmarks {
		if from := b.Attempt; (b.Trial <= 12) != (from != nil && *from == 0) {
			t.Errorf("trial %d: attempt %v", b.Trial, from)
		}
	}
}

// A job.json whose experiment no benchctl would run (two billion trials, impossible node
// counts) is a problem, never a plan computed: collect still reads the node folders.
func TestCollectAHostileExperiment(t *testing.T) {
	for name, je := range map[string]*jobdir.JobExperiment{
		"huge repeat":    {Repeat: 2000000000, Variants: []jobdir.JobVariant{{ID: "a=1"}}},
		"many variants":  {Repeat: 1, Variants: make([]jobdir.JobVariant, 5000)},
		"negative nodes": {Repeat: 1, Variants: []jobdir.JobVariant{{ID: "a=1", Nodes: -5}}},
		"no variants":    {Repeat: 1},
	} {
		t.Run(name, func(t *testing.T) {
			m := jobdir.JobManifest{Name: "exp", Benchmarks: []jobdir.JobBenchmark{{Name: "train"}}, Experiment: je}
			d := jobdirtest.Job(t, jobdir.Layout{Shared: t.TempDir()}.Job("7", 0), jobdirtest.NewJob(t, "7", []string{"h0"}, m))
			jobdirtest.Status(t, d.Node(0, "h0"), &jobdir.Status{Version: 1, Rank: 0, Host: "h0", World: 1, Outcome: jobdir.OutcomeSuccess,
				Benchmarks: []jobdir.BenchmarkStatus{{Name: "train", Outcome: jobdir.OutcomeSuccess, Trial: 1}}})
			s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			if s.Experiment != nil || !strings.Contains(strings.Join(s.Problems, "\n"), "the experiment is not one benchctl runs") {
				t.Errorf("experiment %v, problems %q", s.Experiment, s.Problems)
			}
		})
	}
}

// The manifest's metrics: rule decides the scaling's direction (nothing guessed).
func TestScalingTakesTheManifestsDirection(t *testing.T) {
	value := func(nodes, batch, trial int) float64 { return float64(1000/nodes + trial) }
	d := experimentJob(t, value, func(int, int, int) bool { return false })
	j, err := jobdir.ReadJob(d.JobFile())
	if err != nil {
		t.Fatal(err)
	}
	m := j.Manifest
	m.Metrics = []jobdir.JobMetricRule{{Metric: "samples_*", Better: manifest.BetterLower}}
	if err := j.SetManifest(m); err != nil {
		t.Fatal(err)
	}
	jobdirtest.Job(t, d, j)
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range s.Experiment.Scaling {
		// A time from 1003 on one node to 336 on three: speedup 2.99, lower is better.
		if sc.Better != LowerIsBetter || sc.Guessed || sc.Points[2].Speedup < 2.9 {
			t.Errorf("%+v", sc)
		}
	}
}

// collect reads the trials in the order rank 0 wrote in job.json (trialOrder), not in the
// one its experiment's order would give today: a job whose plan an earlier build shuffled
// is still read right after the algorithm changes.
func TestCollectFollowsTheTrialOrderOfJobJSON(t *testing.T) {
	value := func(nodes, batch, trial int) float64 { return float64(100*nodes + batch + trial) }
	never := func(int, int, int) bool { return false }
	var order []int // every trial of variant 5 first, then 4, ..., 0: not interleaved
	for v := 5; v >= 0; v-- {
		for range 4 {
			order = append(order, v)
		}
	}
	d := experimentInOrder(t, jobdir.Layout{Shared: t.TempDir()}.Job("901", 0), value, never, nil, nil, order)
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.NodeFailures) > 0 || len(s.Problems) > 0 {
		t.Errorf("failures %+v, problems %v", s.NodeFailures, s.Problems)
	}
	for _, vr := range variantRows(t, s) {
		if want := strconv.FormatFloat(value(vr.nodes, vr.batch, 3), 'f', -1, 64); vr.row["performance"] != want {
			t.Errorf("nodes %d batch %d: performance %s, want %s", vr.nodes, vr.batch, vr.row["performance"], want)
		}
	}

	// A trialOrder that does not fit the experiment is a problem said, and the seed's
	// plan is read instead.
	d = experimentInOrder(t, jobdir.Layout{Shared: t.TempDir()}.Job("902", 0), value, never, nil, nil, nil)
	j, err := jobdir.ReadJob(d.JobFile())
	if err != nil {
		t.Fatal(err)
	}
	j.TrialOrder = []int{0, 99}
	jobdirtest.Job(t, d, j)
	s, err = Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(s.Problems, "\n"), "trialOrder: 2 trials") || len(perfRows(t, s)) != 6 {
		t.Errorf("problems %v", s.Problems)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

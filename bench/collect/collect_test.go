package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/benchctl/benchctl/bench/collect/synth"
	"github.com/benchctl/benchctl/results/collect"
)

// jobs are synthetic job folders, written once per test binary and removed by TestMain.
var (
	jobsMu   sync.Mutex
	jobsRoot string
	jobs     = map[synth.Options]string{} // options -> shared dir
)

func TestMain(m *testing.M) {
	code := m.Run()
	if jobsRoot != "" {
		os.RemoveAll(jobsRoot)
	}
	os.Exit(code)
}

// sharedWith returns a shared directory holding job "9000001" with n synthetic nodes.
func sharedWith(tb testing.TB, n int) string {
	return sharedWithJob(tb, synth.Options{JobID: "9000001", Nodes: n, FailEvery: 1000, Seed: 1})
}

// sharedWithJob returns a shared directory holding the synthetic job o.
func sharedWithJob(tb testing.TB, o synth.Options) string {
	tb.Helper()
	jobsMu.Lock()
	defer jobsMu.Unlock()
	if d, ok := jobs[o]; ok {
		return d
	}
	if jobsRoot == "" {
		d, err := os.MkdirTemp("", "collect-bench-")
		if err != nil {
			tb.Fatal(err)
		}
		jobsRoot = d
	}
	shared := filepath.Join(jobsRoot, fmt.Sprint(len(jobs)))
	if _, err := synth.WriteJob(shared, o); err != nil {
		tb.Fatal(err)
	}
	jobs[o] = shared
	return shared
}

// BenchmarkCollect10000 is `benchctl collect` of a job with 10,000 node folders (3 rows
// each, one node in 1,000 timed out): read, aggregate, write perf.csv, summary.json and
// report.html.
func BenchmarkCollect10000(b *testing.B) {
	shared := sharedWith(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		col, err := collect.Collect(context.Background(), collect.CollectOptions{SharedDir: shared, JobID: "9000001", Attempt: -1})
		if err != nil {
			b.Fatal(err)
		}
		if col.Summary.Nodes.Expected != 10000 {
			b.Fatalf("%+v", col.Summary.Nodes)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/node")
}

// BenchmarkCollectExperiment is `benchctl collect` of an experiment: 1,000 nodes, 20
// variants, 5 trials each (100,000 node results; one node times out in every 7th trial).
// Writing the job takes a minute or two here.
func BenchmarkCollectExperiment(b *testing.B) {
	o := synth.Options{JobID: "9000002", Nodes: 1000, Seed: 1, Variants: 20, Trials: 5, FailTrialEvery: 7}
	shared := sharedWithJob(b, o)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		col, err := collect.Collect(context.Background(), collect.CollectOptions{SharedDir: shared, JobID: o.JobID, Attempt: -1})
		if err != nil {
			b.Fatal(err)
		}
		if x := col.Summary.Experiment; x == nil || len(x.Rows) != 20*3 {
			b.Fatalf("%+v", x)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/result")
}

// The memory collect holds while node folders stream in must not grow with the number of
// nodes beyond a small amount per node: (rank, value) pairs for the medians, a compact
// candidate record and a state byte per node — not the nodes' CSVs or statuses.
func TestCollectMemoryFlat(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes 11,000 node folders; memory figures mean nothing under -race")
	}
	const perNodeLimit = 1024 // bytes
	var got [2]figures
	for i, n := range []int{1000, 10000} {
		f, col, err := collectOnce(sharedWith(t, n), "9000001", 500)
		if err != nil {
			t.Fatal(err)
		}
		if col.Summary.Nodes.Expected != n || len(col.Summary.Benchmarks[0].Failed) != n/1000 {
			t.Fatalf("%d nodes: %+v", n, col.Summary.Nodes)
		}
		got[i] = f
		t.Logf("%5d nodes: live heap while streaming %7.0f KiB, after %7.0f KiB, allocated %6.1f MiB",
			n, float64(f.PeakStream)/1024, float64(f.Retained)/1024, float64(f.Allocated)/(1<<20))
	}
	grow := func(a, b uint64) float64 { return (float64(b) - float64(a)) / 9000 }
	stream, kept := grow(got[0].PeakStream, got[1].PeakStream), grow(got[0].Retained, got[1].Retained)
	t.Logf("growth per extra node: %.0f B while streaming, %.0f B kept in the summary", stream, kept)
	if stream > perNodeLimit || kept > perNodeLimit {
		t.Fatalf("memory grows by %.0f B (streaming) / %.0f B (kept) per node; the limit is %d B", stream, kept, perNodeLimit)
	}
}

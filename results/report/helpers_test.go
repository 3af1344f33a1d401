package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
)

// writeToolsJob is writeJob with tools in job.json's manifest and tags on the benchmark.
func writeToolsJob(t *testing.T, shared string, world int, tools []string) string {
	t.Helper()
	nodes := make([]string, world)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("h%d", i)
	}
	m := map[string]any{"name": "t", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv", "tags": []string{"pyt", "echo"}}}}
	if tools != nil {
		m["tools"] = tools
	}
	j := jobdirtest.NewJob(t, "1", nodes, m)
	return jobdirtest.Job(t, jobdir.Layout{Shared: shared}.Job("1", 0), j).Path
}

// writeNode writes a node folder with a status and, unless csv is "", b.csv.
func writeNode(t *testing.T, job string, rank int, outcome string, csv string) {
	t.Helper()
	nd := nodeOf(job, rank)
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &jobdir.Status{Version: 1, Rank: rank, Host: nd.Host, Outcome: outcome, FinishedAt: &end,
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: outcome, DurationSeconds: 1}}}
	if outcome == jobdir.OutcomeRunning {
		st.FinishedAt, st.Benchmarks = nil, nil
	}
	jobdirtest.Mkdir(t, nd.Results("b"))
	jobdirtest.Status(t, nd, st)
	if csv != "" {
		jobdirtest.Result(t, nd, "b", "b.csv", []byte(csv))
	}
}

// nodeOf is the folder writeNode writes for rank: <rank>-h<rank>.
func nodeOf(job string, rank int) jobdir.NodeDir {
	return jobdirtest.At(job).Node(rank, fmt.Sprintf("h%d", rank))
}

// aggregate aggregates a job folder written by writeJob (its id is the folder's name).
func aggregate(t *testing.T, job string) *results.Summary {
	t.Helper()
	s, err := results.Aggregate(context.Background(), jobdir.Dir{Path: job, JobID: filepath.Base(job)}, results.AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) || strings.Contains(l, "%23") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// experimentJob writes the folder of a 3-node job whose experiment is nodes [1, 2, 3] ×
// batch [16, 32], repeat 3 after 1 warmup: every rank of a trial's variant wrote
// value(nodes, batch, trial) samples_per_second, except the trials fail says failed (no
// result). Ranks outside a variant have no record of its trials, as a run leaves them.
func experimentJob(t *testing.T, value func(nodes, batch, trial int) float64, fail func(nodes, batch, trial int) bool) jobdir.Dir {
	t.Helper()
	return experimentAttempt(t, jobdir.Layout{Shared: t.TempDir()}.Job("900", 0), value, fail, nil, nil)
}

// fixedNow stamps summaries so that golden files do not change.
func fixedNow() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }

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

// writeJob makes a job folder: job.json with one benchmark "b" (results b.csv) and nodes.
func writeJob(t *testing.T, shared, id string, world int) string {
	t.Helper()
	nodes := make([]string, world)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("h%d", i)
	}
	j := jobdirtest.NewJob(t, id, nodes, map[string]any{"name": "t", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv"}}, "gpu": map[string]any{"count": "all"}})
	j.Version = 1
	return jobdirtest.Job(t, jobdir.Layout{Shared: shared}.Job(id, 0), j).Path
}

// writeNodeBenches writes a successful node folder with benchmarks b0, b1, ... and the same
// CSV for each.
func writeNodeBenches(t *testing.T, job string, rank int, host string, benches int, csv string) {
	t.Helper()
	nd := jobdirtest.At(job).Node(rank, host)
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &jobdir.Status{Version: 1, Rank: rank, Host: host, Outcome: jobdir.OutcomeSuccess, FinishedAt: &end}
	for i := range benches {
		name := fmt.Sprintf("b%d", i)
		st.Benchmarks = append(st.Benchmarks, jobdir.BenchmarkStatus{Name: name, Outcome: jobdir.OutcomeSuccess, DurationSeconds: 1})
		jobdirtest.Result(t, nd, name, "b.csv", []byte(csv))
	}
	jobdirtest.Status(t, nd, st)
}

// sharedCopy copies testdata/shared into a temp dir: collect writes into job folders.
func sharedCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "shared")
	if err := os.CopyFS(dst, os.DirFS("../testdata/shared")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// telemetryJob is a 3-node job of one benchmark whose nodes left the given summaries (nil:
// none) and results.
func telemetryJob(t *testing.T, metric string, tel ...*jobdir.TelemetrySummary) jobdir.Dir {
	t.Helper()
	hosts := []string{"h0", "h1", "h2"}
	m := jobdir.JobManifest{Name: "tel", Benchmarks: []jobdir.JobBenchmark{{Name: "train", Results: "r.csv"}}}
	d := jobdirtest.Job(t, jobdir.Layout{Shared: t.TempDir()}.Job("77", 0), jobdirtest.NewJob(t, "77", hosts, m))
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for rank, host := range hosts {
		nd := d.Node(rank, host)
		jobdirtest.Status(t, nd, &jobdir.Status{Version: 1, Rank: rank, Host: host, World: 3, Outcome: jobdir.OutcomeSuccess, FinishedAt: &end,
			Benchmarks: []jobdir.BenchmarkStatus{{Name: "train", Outcome: jobdir.OutcomeSuccess, DurationSeconds: 10}}})
		jobdirtest.Result(t, nd, "train", "r.csv", fmt.Appendf(nil, "model,performance,metric\ntrain,%d,%s\n", 1200, metric))
		if rank < len(tel) && tel[rank] != nil {
			tel[rank].Run = "train"
			jobdirtest.TelemetrySummary(t, nd, tel[rank])
		}
	}
	return d
}

// gpuStat is a GPU that drew watts for a run, limited in throttled of 100 samples.
func gpuStat(index int, energy, watts, peak float64, throttled int, reasons string) jobdir.TelemetryGPUStat {
	return jobdir.TelemetryGPUStat{TelemetryGPU: jobdir.TelemetryGPU{Index: index, Name: "H100"}, Samples: 100,
		EnergyJ: fp(energy), EnergyFrom: "counter", AvgPowerW: fp(watts), PeakPowerW: fp(peak), AvgGFXMHz: fp(1900), MaxTempC: fp(70),
		Throttled: throttled, ThrottleKnown: 100, Reasons: reasons}
}
func fp(v float64) *float64 { return &v }

// seriesFile writes a node's series of run: watts and a clock for n seconds, limited from
// limitFrom on.
func seriesFile(t *testing.T, n jobdir.NodeDir, run string, secs int, watts float64, limitFrom int) {
	t.Helper()
	var b strings.Builder
	h, _ := json.Marshal(jobdir.TelemetryHeader{Telemetry: jobdir.TelemetryVersion, Run: run, Source: "nvml", Interval: "1s", GPUs: []jobdir.TelemetryGPU{{Index: 0}}})
	b.Write(append(h, '\n'))
	for i := 0; i < secs; i++ {
		r := jobdir.TelemetryRow{T: float64(i), DT: 1, N: 1, PowerW: fp(watts), GFXMHz: fp(1980), Throttle: 1}
		if i >= limitFrom {
			r.Throttled, r.Reasons, r.GFXMHz = 1, "thermal", fp(1500)
		}
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	jobdirtest.File(t, n.Telemetry(run), []byte(b.String()))
}

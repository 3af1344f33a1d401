// Package resultstest writes the job folders the tests of collect and the report read:
// jobs, nodes and their CSVs, telemetry, tools, and the shared test job; results' own tests
// keep theirs (they cannot import what imports results).
package resultstest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
)

// Aggregate aggregates a job folder written by WriteJob (its id is the folder's name).
func Aggregate(t *testing.T, job string) *results.Summary {
	t.Helper()
	s, err := results.Aggregate(context.Background(), jobdir.Dir{Path: job, JobID: filepath.Base(job)}, results.AggregateOptions{Now: FixedNow})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FixedNow stamps summaries so that golden files do not change.
func FixedNow() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }

// Fp is a pointer to v, for the optional numbers of a telemetry summary.
func Fp(v float64) *float64 { return &v }

// GPUStat is a GPU that drew watts for a run, limited in throttled of 100 samples.
func GPUStat(index int, energy, watts, peak float64, throttled int, reasons string) jobdir.TelemetryGPUStat {
	return jobdir.TelemetryGPUStat{TelemetryGPU: jobdir.TelemetryGPU{Index: index, Name: "H100"}, Samples: 100,
		EnergyJ: Fp(energy), EnergyFrom: "counter", AvgPowerW: Fp(watts), PeakPowerW: Fp(peak), AvgGFXMHz: Fp(1900), MaxTempC: Fp(70),
		Throttled: throttled, ThrottleKnown: 100, Reasons: reasons}
}

// NodeOf is the folder WriteNode writes for rank: <rank>-h<rank>.
func NodeOf(job string, rank int) jobdir.NodeDir {
	return jobdirtest.At(job).Node(rank, fmt.Sprintf("h%d", rank))
}

// SeriesFile writes a node's series of run: watts and a clock for n seconds, limited from
// limitFrom on.
func SeriesFile(t *testing.T, n jobdir.NodeDir, run string, secs int, watts float64, limitFrom int) {
	t.Helper()
	var b strings.Builder
	h, _ := json.Marshal(jobdir.TelemetryHeader{Telemetry: jobdir.TelemetryVersion, Run: run, Source: "nvml", Interval: "1s", GPUs: []jobdir.TelemetryGPU{{Index: 0}}})
	b.Write(append(h, '\n'))
	for i := 0; i < secs; i++ {
		r := jobdir.TelemetryRow{T: float64(i), DT: 1, N: 1, PowerW: Fp(watts), GFXMHz: Fp(1980), Throttle: 1}
		if i >= limitFrom {
			r.Throttled, r.Reasons, r.GFXMHz = 1, "thermal", Fp(1500)
		}
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	jobdirtest.File(t, n.Telemetry(run), []byte(b.String()))
}

// SharedCopy copies testdata/shared into a temp dir: collect writes into job folders.
func SharedCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "shared")
	if err := os.CopyFS(dst, os.DirFS("../testdata/shared")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TelemetryJob is a 3-node job of one benchmark whose nodes left the given summaries (nil:
// none) and results.
func TelemetryJob(t *testing.T, metric string, tel ...*jobdir.TelemetrySummary) jobdir.Dir {
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

// WriteJob makes a job folder: job.json with one benchmark "b" (results b.csv) and nodes.
func WriteJob(t *testing.T, shared, id string, world int) string {
	t.Helper()
	nodes := make([]string, world)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("h%d", i)
	}
	j := jobdirtest.NewJob(t, id, nodes, map[string]any{"name": "t", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv"}}, "gpu": map[string]any{"count": "all"}})
	j.Version = 1
	return jobdirtest.Job(t, jobdir.Layout{Shared: shared}.Job(id, 0), j).Path
}

// WriteNode writes a node folder with a status and, unless csv is "", b.csv.
func WriteNode(t *testing.T, job string, rank int, outcome string, csv string) {
	t.Helper()
	nd := NodeOf(job, rank)
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

// WriteNodeBenches writes a successful node folder with benchmarks b0, b1, ... and the same
// CSV for each.
func WriteNodeBenches(t *testing.T, job string, rank int, host string, benches int, csv string) {
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

// WriteToolsJob is WriteJob with tools in job.json's manifest and tags on the benchmark.
func WriteToolsJob(t *testing.T, shared string, world int, tools []string) string {
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

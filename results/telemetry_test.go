package results

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

func fp(v float64) *float64 { return &v }

// gpuStat is a GPU that drew watts for a run, limited in throttled of 100 samples.
func gpuStat(index int, energy, watts, peak float64, throttled int, reasons string) jobdir.TelemetryGPUStat {
	return jobdir.TelemetryGPUStat{TelemetryGPU: jobdir.TelemetryGPU{Index: index, Name: "H100"}, Samples: 100,
		EnergyJ: fp(energy), EnergyFrom: "counter", AvgPowerW: fp(watts), PeakPowerW: fp(peak), AvgGFXMHz: fp(1900), MaxTempC: fp(70),
		Throttled: throttled, ThrottleKnown: 100, Reasons: reasons}
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

func TestCollectSumsTheNodesTelemetry(t *testing.T) {
	d := telemetryJob(t, "samples_per_second",
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{gpuStat(0, 3000, 300, 350, 0, ""), gpuStat(1, 3000, 300, 340, 2, "power")}},
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{gpuStat(0, 2000, 200, 400, 6, "thermal+other"), gpuStat(1, 2000, 200, 210, 0, "")}},
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{gpuStat(0, 0, 0, 0, 0, "")}})
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	tel := s.Benchmarks[0].Telemetry
	if tel == nil || tel.Nodes != 3 || *tel.EnergyJ != 10000 || *tel.AvgPowerW != 1000 || *tel.PeakPowerW != 690 || !tel.Complete() {
		t.Fatalf("telemetry: %+v", tel)
	}
	if !tel.Throttled || len(tel.ThrottledNodes) != 1 || tel.ThrottledNodes[0].Rank != 1 || tel.ThrottledNodes[0].ThrottledPercent != 6 ||
		tel.ThrottledNodes[0].Reasons != "thermal+other" {
		t.Errorf("throttled: %+v", tel.ThrottledNodes)
	}
	if len(tel.PerNode) != 3 || tel.PerNode[0].Throttled || *tel.PerNode[0].EnergyJ != 6000 || tel.PerNode[0].Series != "nodes/0-h0/telemetry/train.jsonl" {
		t.Errorf("per node: %+v", tel.PerNode)
	}
	row := perfRows(t, s)[0]
	want := map[string]string{"energy_j": "10000", "avg_power_w": "1000", "peak_power_w": "690", "perf_per_watt": "1.2", "throttled": "true"}
	for k, v := range want {
		if row[k] != v {
			t.Errorf("perf.csv %s = %q, want %q", k, row[k], v)
		}
	}
	var out strings.Builder
	if err := WriteRows(&out, false, s); err != nil || !strings.Contains(out.String(), "throttled: 1-h1 (thermal 6%)") {
		t.Errorf("the table's note (%v):\n%s", err, out.String())
	}
	// 2 % of samples limited is a transient, not a throttled node.
	if tel.PerNode[0].ThrottledPercent != 2 || tel.PerNode[0].Throttled {
		t.Errorf("node 0: %+v", tel.PerNode[0])
	}
}

func TestPerfPerWattOnlyForThroughputs(t *testing.T) {
	one := func() *jobdir.TelemetrySummary {
		return &jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{gpuStat(0, 100, 100, 100, 0, "")}}
	}
	d := telemetryJob(t, "latency_ms", one(), one(), one())
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if row := perfRows(t, s)[0]; row["perf_per_watt"] != "" || row["avg_power_w"] != "300" || row["throttled"] != "false" {
		t.Errorf("a latency per watt means nothing: %v", row)
	}
}

func TestTelemetryUnavailableLeavesTheColumnsEmpty(t *testing.T) {
	none := &jobdir.TelemetrySummary{Unavailable: []jobdir.TelemetryNote{{GPU: -1, Field: "gpu", Why: "no GPUs found: this node runs its benchmarks without GPUs"}}}
	d := telemetryJob(t, "samples_per_second", none, none, none)
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	tel := s.Benchmarks[0].Telemetry
	if tel == nil || tel.Nodes != 0 || tel.NodesWithout != 3 || !strings.Contains(tel.Unavailable, "without GPUs") || tel.EnergyJ != nil {
		t.Errorf("telemetry: %+v", tel)
	}
	row := perfRows(t, s)[0]
	for _, c := range []string{"energy_j", "avg_power_w", "throttled", "perf_per_watt"} {
		if row[c] != "" {
			t.Errorf("%s = %q without telemetry", c, row[c])
		}
	}
	if s.Benchmarks[0].Status != StatusSuccess {
		t.Errorf("telemetry never fails a result: %+v", s.Benchmarks[0])
	}
}

// Summaries a co-writer damaged or replaced are problems of their node, never a hang or a
// crash, and never figures.
func TestHostileTelemetrySummaries(t *testing.T) {
	d := telemetryJob(t, "samples_per_second")
	bad := map[int]func(path string){
		0: func(p string) { jobdirtest.File(t, p, []byte("{not json")) },
		1: func(p string) { jobdirtest.Mkdir(t, p[:strings.LastIndex(p, "/")]); syscall.Mkfifo(p, 0o644) },
		2: func(p string) {
			jobdirtest.Mkdir(t, p[:strings.LastIndex(p, "/")])
			os.Symlink("/etc/passwd", p)
		},
	}
	for rank, host := range []string{"h0", "h1", "h2"} {
		bad[rank](d.Node(rank, host).TelemetrySummary("train"))
	}
	done := make(chan struct{})
	var s *Summary
	var err error
	go func() { s, err = Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow}); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("collect hung on a telemetry summary")
	}
	if err != nil {
		t.Fatal(err)
	}
	b := s.Benchmarks[0]
	if b.Telemetry != nil || b.Status != StatusSuccess {
		t.Errorf("telemetry from damaged files: %+v", b.Telemetry)
	}
	problems := 0
	for _, c := range b.Candidates {
		if strings.Contains(c.Problem, "telemetry: ") {
			problems++
		}
	}
	if problems != 3 {
		t.Errorf("%d of 3 damaged summaries named: %+v", problems, b.Candidates)
	}
	// Another schema version is named as such.
	jobdirtest.File(t, d.Node(0, "h0").TelemetrySummary("train"), []byte(`{"telemetry": 9, "run": "train"}`))
	s, _ = Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if p := s.Benchmarks[0].Candidates[0].Problem; !strings.Contains(p, "telemetry schema 9") {
		t.Errorf("problem: %q", p)
	}
}

// A variant's row carries its measured trials' median energy and power, and which trials
// were throttled; warmups do not count.
func TestExperimentTelemetryOverTrials(t *testing.T) {
	d := experimentJob(t, func(nodes, batch, trial int) float64 { return 100 }, func(int, int, int) bool { return false })
	j, err := jobdir.ReadJob(d.JobFile())
	if err != nil {
		t.Fatal(err)
	}
	x := planOf(j)
	for _, tr := range x.Plan(0) {
		v := x.Variants[tr.Variant]
		for rank := 0; rank < v.Nodes; rank++ {
			energy := float64(100 * tr.N)
			throttled := 0
			if v.Nodes == 1 && tr.N == 2 {
				throttled = 50
			}
			jobdirtest.TelemetrySummary(t, d.Node(rank, fmt.Sprintf("h%d", rank)), &jobdir.TelemetrySummary{Run: jobdir.TrialRunName("train", tr.Seq),
				GPUs: []jobdir.TelemetryGPUStat{gpuStat(0, energy, 50, 60, throttled, "power")}})
		}
	}
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, er := range s.Experiment.Rows {
		tt := er.Telemetry
		if tt == nil || tt.Trials != 3 {
			t.Fatalf("%s: %+v", er.Variant, tt)
		}
		// Trials 2..4 are measured (trial 1 is the warmup: 100 J, never counted).
		if want := float64(300 * er.Nodes); *tt.EnergyJ != want || *tt.AvgPowerW != float64(50*er.Nodes) {
			t.Errorf("%s: energy %v power %v, want %v and %v", er.Variant, *tt.EnergyJ, *tt.AvgPowerW, want, 50*er.Nodes)
		}
		if (er.Nodes == 1) != tt.Throttled || (er.Nodes == 1 && fmt.Sprint(tt.ThrottledTrials) != "[2]") {
			t.Errorf("%s: throttled %v in %v", er.Variant, tt.Throttled, tt.ThrottledTrials)
		}
	}
	for _, row := range perfRows(t, s) {
		if row["energy_j"] == "" || row["perf_per_watt"] == "" || row["throttled"] == "" {
			t.Errorf("variant %s: %v", row["benchctl_variant"], row)
		}
	}
}

// A run's figures over some of its nodes are never printed as the run's: a node killed
// before its summary (or one without GPUs) leaves perf.csv's energy, power and per-watt
// columns empty, while summary.json keeps the part and says how many nodes it lacks.
// A node whose GPUs cannot say whether they were limited (hwmon) leaves throttled empty.
func TestPartialTelemetryIsNotTheRuns(t *testing.T) {
	hwmon := func() *jobdir.TelemetrySummary {
		g := gpuStat(0, 100, 100, 100, 0, "")
		g.ThrottleKnown = 0
		return &jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{g}}
	}
	d := telemetryJob(t, "samples_per_second", hwmon(), hwmon(), nil)
	s, err := Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	tel := s.Benchmarks[0].Telemetry
	if tel == nil || tel.Nodes != 2 || tel.NodesMissing != 1 || tel.Complete() || *tel.EnergyJ != 200 || tel.ThrottleKnown {
		t.Fatalf("telemetry: %+v", tel)
	}
	row := perfRows(t, s)[0]
	for _, c := range []string{"energy_j", "avg_power_w", "peak_power_w", "perf_per_watt", "throttled"} {
		if row[c] != "" {
			t.Errorf("%s = %q from 2 of 3 nodes, or without throttle status", c, row[c])
		}
	}
	// A node of two GPUs, one without an energy counter or power: the node's sum would be
	// one GPU's, so it has none.
	g0, g1 := gpuStat(0, 100, 100, 100, 0, ""), gpuStat(1, 100, 100, 100, 0, "")
	g1.EnergyJ, g1.AvgPowerW = nil, nil
	d = telemetryJob(t, "samples_per_second", &jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{g0, g1}})
	s, _ = Aggregate(context.Background(), d, AggregateOptions{Now: fixedNow})
	if n := s.Benchmarks[0].Telemetry.PerNode[0]; n.EnergyJ != nil || n.AvgPowerW != nil || n.PeakPowerW == nil {
		t.Errorf("node of a GPU without energy: %+v", n)
	}
}

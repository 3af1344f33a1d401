package collect

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
	"github.com/benchctl/benchctl/results/report"
)

// Numbers a node wrote that no GPU gives are left out for that node and said; the rest of
// the job is collected, and every output is written with finite numbers: two GPUs at 1e308 J
// (whose sum was +Inf and failed summary.json), negative energy and peak power, throttled
// samples above 100 %, and a series row at a negative time (which panicked the report).
func TestOutOfRangeTelemetryIsLeftOut(t *testing.T) {
	huge := resultstest.GPUStat(0, 1e308, 300, 350, 0, "")
	huge2 := resultstest.GPUStat(1, 1e308, 300, 350, 0, "")
	neg := resultstest.GPUStat(0, -5000, 200, -400, 0, "")
	over := resultstest.GPUStat(0, 2000, 200, 400, 0, "")
	over.Throttled, over.ThrottleKnown = 250, 100
	d := resultstest.TelemetryJob(t, "samples_per_second",
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{huge, huge2}},
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{neg}},
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{over}})
	resultstest.SeriesFile(t, d.Node(1, "h1"), "train", 20, 200, 1000)
	series := d.Node(1, "h1").Telemetry("train")
	b, _ := os.ReadFile(series)
	os.WriteFile(series, append(b, []byte(`{"t":-1e9,"dt":1,"gpu":0,"n":1,"power_w":100}`+"\n")...), 0o644)
	s, err := results.Aggregate(context.Background(), d, results.AggregateOptions{Now: resultstest.FixedNow})
	if err != nil {
		t.Fatal(err)
	}
	tel := s.Benchmarks[0].Telemetry
	// Energy and peak power are out of range on nodes 0 and 1: the job's would be a part of it.
	if tel == nil || tel.EnergyJ != nil || tel.PeakPowerW != nil || tel.AvgPowerW == nil || *tel.AvgPowerW != 1000 || tel.Throttled {
		t.Errorf("telemetry: %+v", tel)
	}
	problems := 0
	for _, c := range s.Benchmarks[0].Candidates {
		if strings.Contains(c.Problem, "is out of range") || strings.Contains(c.Problem, "is not a share of them") {
			problems++
		}
	}
	if problems != 3 {
		t.Errorf("%d of 3 nodes' out-of-range figures named: %+v", problems, s.Benchmarks[0].Candidates)
	}
	var out strings.Builder
	for _, f := range []string{results.FormatJSON, results.FormatCSV, results.FormatTable} {
		out.Reset()
		if err := WriteResults(&out, f, s, results.PerfTable(s)); err != nil || strings.Contains(out.String(), "Inf") || strings.Contains(out.String(), "NaN") {
			t.Errorf("%s: %v\n%.500s", f, err, out.String())
		}
	}
	out.Reset()
	if err := report.WriteReport(&out, s); err != nil || !strings.Contains(out.String(), "rows out of range were left out") {
		t.Errorf("report: %v", err)
	}
	row := perfRows(t, s)[0]
	for _, k := range []string{"energy_j", "peak_power_w"} {
		if row[k] != "" {
			t.Errorf("perf.csv %s = %q, want empty", k, row[k])
		}
	}
}

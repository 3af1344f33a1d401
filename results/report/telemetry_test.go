package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

func TestReportDrawsTimelines(t *testing.T) {
	d := resultstest.TelemetryJob(t, "samples_per_second",
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{resultstest.GPUStat(0, 3000, 300, 350, 0, "")}},
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{resultstest.GPUStat(0, 2000, 200, 400, 60, "thermal")}},
		&jobdir.TelemetrySummary{GPUs: []jobdir.TelemetryGPUStat{resultstest.GPUStat(0, 2000, 200, 400, 0, "")}})
	resultstest.SeriesFile(t, d.Node(0, "h0"), "train", 100, 300, 1000)
	resultstest.SeriesFile(t, d.Node(1, "h1"), "train", 100, 200, 40)
	jobdirtest.File(t, d.Node(2, "h2").Telemetry("train"), []byte("{\"telemetry\":1}\n{bad\n"))
	s, err := results.Aggregate(context.Background(), d, results.AggregateOptions{Now: resultstest.FixedNow})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteReport(&out, s); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	for _, want := range []string{"GPU telemetry", "over 3 nodes: energy 7 kJ", "throttled: 1-h1 (thermal 60%)",
		`class="timeline throttled" data-node="1-h1"`, `<path class="power" d="M`, `class="limit"`, "2-h2: reading", "line 2"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The throttled node's timeline comes first.
	if i, j := strings.Index(html, `data-node="1-h1"`), strings.Index(html, `data-node="0-h0"`); i < 0 || j < 0 || i > j {
		t.Errorf("timeline order: 1-h1 at %d, 0-h0 at %d", i, j)
	}
	// A telemetry folder that is a link out of the job folder is not read through.
	elsewhere := t.TempDir()
	resultstest.SeriesFile(t, jobdir.NodeDir{Path: elsewhere}, "train", 50, 999, 1000)
	folder := filepath.Dir(d.Node(2, "h2").Telemetry("train"))
	os.RemoveAll(folder)
	if err := os.Symlink(filepath.Join(elsewhere, jobdir.TelemetryFolder), folder); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteReport(&out, s); err != nil {
		t.Fatal(err)
	}
	if html := out.String(); !strings.Contains(html, "2-h2: ") || strings.Contains(html, "999") {
		t.Errorf("the linked series: %s", html[strings.Index(html, "GPU telemetry"):][:600])
	}
}

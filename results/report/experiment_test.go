package report

import (
	"context"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// The report of an experiment shows the scaling charts, the variant table with a strip of
// trials per row (warmups and the outlier marked) and a section for the failed trial only.
func TestReportOfAnExperiment(t *testing.T) {
	value := func(nodes, batch, trial int) float64 {
		if nodes == 3 && batch == 32 && trial == 4 {
			return 5000
		}
		return float64(100*nodes + batch + trial)
	}
	d := experimentJob(t, value, func(nodes, batch, trial int) bool { return nodes == 2 && batch == 16 && trial == 3 })
	s, err := results.Aggregate(context.Background(), d, results.AggregateOptions{Now: resultstest.FixedNow})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteReport(&b, s); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`<section class="experiment"`, `data-scaling="train samples_per_second · batch=16"`, `data-scaling="train samples_per_second · batch=32"`,
		`class="ideal"`, `<circle class="outlier"`, `<circle class="warmup"`, "6 variants × (1 warmup &#43; 3 measured) trials, order interleave", "2 (&#43;1 failed)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if n := strings.Count(page, `data-benchmark="`); n != 1 || !strings.Contains(page, `data-benchmark="train@15"`) {
		t.Errorf("%d benchmark sections, want 1 (the failed trial run)", n)
	}
	// 6 variants × 4 trials, less the failed one: 23 dots.
	if n := strings.Count(page, `<circle class="measured"`) + strings.Count(page, `<circle class="warmup"`) + strings.Count(page, `<circle class="outlier"`); n != 23 {
		t.Errorf("%d trial dots, want 23", n)
	}
}

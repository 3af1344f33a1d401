package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// A spread of 2 to 5 % between nodes must be plain to see: more than 30 % of the bar
// length, on an axis that starts below the smallest value (and above zero, which the
// chart then says).
func TestValueAxisShowsSmallSpreads(t *testing.T) {
	for _, base := range []float64{0.37, 1, 7.3, 99.9, 100, 992.17, 13720, 2.5e6, 8.1e11} {
		for _, spread := range []float64{0.02, 0.03, 0.05} {
			lo, hi := base, base*(1+spread)
			ax := valueAxis(lo, hi)
			shown := ax.frac(hi) - ax.frac(lo)
			if !ax.Truncated() || shown <= 0.3 || ax.Lo > lo || ax.Hi < hi || !(ax.Step > 0) {
				t.Errorf("valueAxis(%g, %g) = %+v: the spread is %.0f %% of the bars", lo, hi, ax, shown*100)
			}
			ticks := ax.ticks()
			if len(ticks) < 2 || len(ticks) > 13 || ticks[0] != ax.Lo || ticks[len(ticks)-1] > ax.Hi {
				t.Errorf("valueAxis(%g, %g) ticks %v", lo, hi, ticks)
			}
		}
	}
}

// Zero stays the start where starting elsewhere would gain little, or show nothing.
func TestValueAxisStartsAtZero(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{
		{10, 100},    // a large spread: from zero it shows
		{0, 5},       // zero is a value
		{-3, 5},      // negative values
		{-5, -1},     // only negative values
		{7, 7},       // one value, or all the same: nothing to magnify
		{1, 1.7e308}, // the ends of float64
		{-1.7e308, 1.7e308},
	} {
		ax := valueAxis(c.lo, c.hi)
		if ax.Truncated() || math.IsNaN(ax.Hi) || math.IsInf(ax.Hi, 0) || !(ax.Hi > 0) {
			t.Errorf("valueAxis(%g, %g) = %+v, want a finite axis from zero", c.lo, c.hi, ax)
		}
		for _, v := range []float64{c.lo, c.hi, 0} {
			if f := ax.frac(v); !(f >= 0 && f <= 1) {
				t.Errorf("valueAxis(%g, %g).frac(%g) = %g", c.lo, c.hi, v, f)
			}
		}
	}
}

// The chart itself: three nodes 2 % apart get bars whose lengths differ by more than 30 %
// of the bar area, and the chart says where its axis starts.
func TestBarChartMagnifiesASmallSpread(t *testing.T) {
	s := &results.Summary{}
	r := results.RowSummary{Model: "m", Metric: "samples_per_second", Stats: stats.Stats{Nodes: 3, Median: 101,
		Values: []stats.NodeValue{{Rank: 0, Value: 100}, {Rank: 1, Value: 101}, {Rank: 2, Value: 102}}}}
	c := valueChart(s, &results.BenchmarkSummary{}, r)
	if c.Histogram || len(c.Bars) != 3 {
		t.Fatalf("chart %+v", c)
	}
	if d := c.Bars[2].W - c.Bars[0].W; d <= 0.3*chartBarWidth {
		t.Errorf("bars for 100 and 102 are %.0f and %.0f px of %d", c.Bars[0].W, c.Bars[2].W, chartBarWidth)
	}
	if !strings.HasPrefix(c.AxisNote, "axis starts at ") || !strings.HasSuffix(c.AxisNote, ", not at zero") {
		t.Errorf("axis note %q", c.AxisNote)
	}
	if len(c.Ticks) < 2 || c.Ticks[0].X != chartLabelWidth {
		t.Errorf("ticks %+v", c.Ticks)
	}
	// Far apart: from zero, and nothing to say about it.
	r.Stats.Values[0].Value = 10
	if c := valueChart(s, &results.BenchmarkSummary{}, r); c.AxisNote != "" || c.Bars[0].W >= c.Bars[2].W/5 {
		t.Errorf("10 against 102: note %q, bars %.0f and %.0f px", c.AxisNote, c.Bars[0].W, c.Bars[2].W)
	}
}

func TestNiceStep(t *testing.T) {
	for x, want := range map[float64]float64{0.816: 1, 1: 1, 1.01: 2, 2.2: 2.5, 3: 5, 7: 10, 28.8: 50, 140: 200, 0.0003: 0.0005} {
		if got := niceStep(x); math.Abs(got-want) > want*1e-9 {
			t.Errorf("niceStep(%g) = %g, want %g", x, got, want)
		}
	}
	if got := fmt.Sprint(niceStep(0), niceStep(-1), niceStep(math.Inf(1))); got != "0 0 0" {
		t.Errorf("niceStep of nothing: %s", got)
	}
}

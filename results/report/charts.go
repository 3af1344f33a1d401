package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// The report's SVG drawings, computed here so that the template only places them.

type strip struct {
	W, H    int
	Cells   []cell
	Stacked []cell // segments, when there are too many nodes for cells
	Legend  []legendItem
}

type cell struct {
	X, Y, W, H float64
	Class, Tip string
}

type legendItem struct {
	Class, Label string
	N            int
}

type chart struct {
	Title       string
	Histogram   bool
	W, H        int
	Bars        []bar
	Ticks       []tick
	PlotTop     float64 // where the bars start
	MedianX     float64
	MedianLabel string  // "median 993.4", above the median line ("": no line, for one node)
	AxisX       float64 // where the value axis starts
	AxisEnd     float64 // and where it ends
	AxisY       float64 // the value axis
	AxisNote    string  // "axis starts at 96, not at zero", when it does not
	Note        string
	Slowest     []slowNode // named under the chart
	SlowestText string     // "slowest: 3-n3 (−4.1 % vs median), ...", for the chart's label
}

// tick is a value on the axis: a grid line and its label.
type tick struct {
	X     float64
	Label string
}

type bar struct {
	X, Y, W, H float64
	LabelX     float64
	Label      string
	Value      string
	Class, Tip string
}

// stateName is the CSS class and the words for a node state.
func stateName(x byte) (class, label string) {
	switch x {
	case results.StateOK:
		return "st-ok", "succeeded"
	case results.StateFailed:
		return "st-failed", "failed"
	case results.StateRunning:
		return "st-running", "running"
	case results.StateSkipped:
		return "st-skipped", "skipped"
	case results.StateMissing:
		return "st-missing", "never reported"
	}
	return "st-none", "no record"
}

func nodeLabel(s *results.Summary, rank int) string {
	if s.JobJSON() != nil && rank < len(s.JobJSON().Nodes) {
		return jobdir.NodeName(rank, s.JobJSON().Nodes[rank])
	}
	return "rank " + strconv.Itoa(rank)
}

// nodeStrip draws one cell per node coloured by its state, or a stacked bar for many nodes.
func nodeStrip(s *results.Summary, b *results.BenchmarkSummary) strip {
	var st strip
	ns := b.NodeStates()
	for k, n := range ns.Counts {
		if n > 0 {
			class, label := stateName(byte(k))
			st.Legend = append(st.Legend, legendItem{Class: class, Label: label, N: n})
		}
	}
	if ns.N <= results.MaxStripNodes {
		rows := (ns.N + stripCellsPerRow - 1) / stripCellsPerRow
		st.W = min(ns.N, stripCellsPerRow) * stripCell
		st.H = rows * stripCell
		for rank, x := range ns.Cells {
			class, label := stateName(x)
			st.Cells = append(st.Cells, cell{X: float64(rank%stripCellsPerRow) * stripCell, Y: float64(rank/stripCellsPerRow) * stripCell,
				W: stripCell - 2, H: stripCell - 2, Class: class, Tip: nodeLabel(s, rank) + ": " + label})
		}
		return st
	}
	st.W, st.H = chartWidth, 20
	x := 0.0
	for _, l := range st.Legend {
		w := float64(chartWidth) * float64(l.N) / float64(ns.N)
		st.Stacked = append(st.Stacked, cell{X: x, W: w, H: 20, Class: l.Class, Tip: fmt.Sprintf("%s: %d nodes", l.Label, l.N)})
		x += w
	}
	return st
}

// valueChart draws one bar per node (few nodes) or a histogram of the values (many).
func valueChart(s *results.Summary, b *results.BenchmarkSummary, r results.RowSummary) chart {
	st := r.Stats
	slow := slowest(r, maxSlowest)
	c := chart{Title: strings.TrimSpace(r.Model + " · " + r.Metric), Slowest: slowestNodes(s, r, slow)}
	c.SlowestText = slowestText(c.Slowest)
	lo, hi := st.Values[0].Value, st.Values[0].Value
	for _, v := range st.Values {
		lo, hi = min(lo, v.Value), max(hi, v.Value)
	}
	if len(st.Values) > 1 {
		c.MedianLabel = "median " + readable(st.Median)
	}
	if len(st.Values) <= maxBarNodes {
		barChart(&c, s, b, st, slow, lo, hi)
		return c
	}
	histogram(&c, st, slow, lo, hi)
	return c
}

// Bar chart layout (pixels): the median's label above the bars, the ticks' labels and the
// note about the axis below them.
const (
	barTop     = 20.0
	tickLabelY = 14.0 // below the axis
	axisNoteY  = 32.0 // below the axis
)

// barChart draws one bar per node on an axis chosen to show the differences between nodes.
func barChart(c *chart, s *results.Summary, b *results.BenchmarkSummary, st stats.Stats, slow []stats.NodeValue, lo, hi float64) {
	ax := valueAxis(lo, hi)
	xOf := func(v float64) float64 { return chartLabelWidth + chartBarWidth*ax.frac(v) }
	winner := -1
	if b.Winner != nil {
		winner = b.Winner.Rank
	}
	c.W = chartWidth
	c.PlotTop, c.AxisX, c.AxisEnd = barTop, chartLabelWidth, chartLabelWidth+chartBarWidth
	c.AxisY = barTop + float64(len(st.Values)*chartRowHeight) + 2
	c.H = int(c.AxisY + tickLabelY + 8)
	amber := false // a slow node drawn as such (the winner keeps its colour)
	for i, v := range st.Values {
		y := barTop + float64(i*chartRowHeight)
		class := "bar"
		switch {
		case v.Rank == winner:
			class = "bar win"
		case slices.ContainsFunc(slow, func(x stats.NodeValue) bool { return x.Rank == v.Rank }):
			class = "bar slow"
			amber = true
		}
		label := nodeLabel(s, v.Rank)
		w := max(1, xOf(v.Value)-chartLabelWidth)
		c.Bars = append(c.Bars, bar{X: chartLabelWidth, Y: y, W: w, H: chartRowHeight - 4, LabelX: chartLabelWidth - 6,
			Label: label, Value: readable(v.Value), Class: class, Tip: label + ": " + stats.FormatStat(v.Value)})
	}
	for _, t := range ax.ticks() {
		c.Ticks = append(c.Ticks, tick{X: xOf(t), Label: readable(t)})
	}
	c.MedianX = xOf(st.Median)
	c.Note = "dashed line: the median; dark blue: the node whose CSV won"
	if c.MedianLabel == "" {
		c.Note = "dark blue: the node whose CSV won"
	}
	if amber {
		c.Note += "; amber: the slowest, named above"
	}
	if ax.Truncated() {
		c.AxisNote = "axis starts at " + readable(ax.Lo) + ", not at zero"
		c.H = int(c.AxisY + axisNoteY + 6)
	}
}

// Histogram layout (pixels).
const (
	histTop  = 18.0
	histPlot = histogramHeight - 20 // the tallest bin
)

// histogram draws how many nodes fall in each of histogramBins bins from the smallest value
// to the largest.
func histogram(c *chart, st stats.Stats, slow []stats.NodeValue, lo, hi float64) {
	c.Histogram = true
	c.W = chartWidth
	c.PlotTop, c.AxisX, c.AxisEnd = histTop, 0, chartWidth
	c.AxisY = histTop + histPlot
	c.H = int(c.AxisY + tickLabelY + 10)
	counts := make([]int, histogramBins)
	span := hi/2 - lo/2 // halved, so that hi-lo cannot overflow to +Inf; doubled where it is shown
	bin := func(v float64) int {
		return min(histogramBins-1, int(spanFraction(v, lo, span)*histogramBins))
	}
	for _, v := range st.Values {
		counts[bin(v.Value)]++
	}
	most := 1
	for _, n := range counts {
		most = max(most, n)
	}
	plotX, plotW := 20.0, float64(chartWidth-40)
	bw := plotW / histogramBins
	slowBins := make([]bool, histogramBins)
	for _, v := range slow {
		slowBins[bin(v.Value)] = true
	}
	for i, n := range counts {
		if n == 0 {
			continue
		}
		h := histPlot * float64(n) / float64(most)
		from := lo + 2*span*float64(i)/histogramBins
		class := "bar"
		if slowBins[i] {
			class = "bar slow"
		}
		c.Bars = append(c.Bars, bar{X: plotX + float64(i)*bw, Y: c.AxisY - h, W: bw - 1, H: h, Class: class,
			Tip: fmt.Sprintf("%d nodes from %s to %s", n, readable(from), readable(from+2*span/histogramBins))})
	}
	// Ticks at round values between the smallest value and the largest.
	if step := niceStep(span / 2.5); step > 0 {
		for t := math.Ceil(lo/step) * step; t <= hi && len(c.Ticks) < 12; t += step {
			c.Ticks = append(c.Ticks, tick{X: plotX + plotW*spanFraction(t, lo, span), Label: readable(t)})
		}
	}
	c.MedianX = plotX + plotW*spanFraction(st.Median, lo, span)
	c.Note = fmt.Sprintf("%d nodes in %d bins (tallest: %d nodes) from the smallest value, %s, to the largest, %s; dashed line: the median",
		len(st.Values), histogramBins, most, readable(lo), readable(hi))
	if len(slow) > 0 {
		c.Note += "; amber: the bins of the slowest nodes, named above"
	}
}

// spanFraction is where v lies between lo and lo+2*halfSpan, in [0, 1]; 0 for an empty or
// non-finite span (values near the float64 limits must not turn into NaN indices).
func spanFraction(v, lo, halfSpan float64) float64 {
	if !(halfSpan > 0) || math.IsInf(halfSpan, 0) {
		return 0
	}
	f := (v/2 - lo/2) / halfSpan
	if !(f >= 0) { // also NaN
		return 0
	}
	return min(f, 1)
}

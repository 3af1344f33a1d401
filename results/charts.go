package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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
	MedianX     float64
	AxisY       float64
	Left, Right string
	Note        string
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
	case stOK:
		return "st-ok", "succeeded"
	case stFailed:
		return "st-failed", "failed"
	case stRunning:
		return "st-running", "running"
	case stSkipped:
		return "st-skipped", "skipped"
	case stMissing:
		return "st-missing", "never reported"
	}
	return "st-none", "no record"
}

const numStates = int(stMissing) + 1

func nodeLabel(s *Summary, rank int) string {
	if s.job != nil && rank < len(s.job.Nodes) {
		return fmt.Sprintf("%d-%s", rank, s.job.Nodes[rank])
	}
	return "rank " + strconv.Itoa(rank)
}

// nodeStrip draws one cell per node coloured by its state, or a stacked bar for many nodes.
func nodeStrip(s *Summary, b *BenchmarkSummary) strip {
	var st strip
	ns := &b.nodes
	for k, n := range ns.counts {
		if n > 0 {
			class, label := stateName(byte(k))
			st.Legend = append(st.Legend, legendItem{Class: class, Label: label, N: n})
		}
	}
	if ns.n <= maxStripNodes {
		rows := (ns.n + stripCellsPerRow - 1) / stripCellsPerRow
		st.W = min(ns.n, stripCellsPerRow) * stripCell
		st.H = rows * stripCell
		for rank, x := range ns.cells {
			class, label := stateName(x)
			st.Cells = append(st.Cells, cell{X: float64(rank%stripCellsPerRow) * stripCell, Y: float64(rank/stripCellsPerRow) * stripCell,
				W: stripCell - 2, H: stripCell - 2, Class: class, Tip: nodeLabel(s, rank) + ": " + label})
		}
		return st
	}
	st.W, st.H = chartWidth, 20
	x := 0.0
	for _, l := range st.Legend {
		w := float64(chartWidth) * float64(l.N) / float64(ns.n)
		st.Stacked = append(st.Stacked, cell{X: x, W: w, H: 20, Class: l.Class, Tip: fmt.Sprintf("%s: %d nodes", l.Label, l.N)})
		x += w
	}
	return st
}

// valueChart draws one bar per node (few nodes) or a histogram of the values (many).
func valueChart(s *Summary, b *BenchmarkSummary, r RowSummary) chart {
	st := r.Stats
	c := chart{Title: strings.TrimSpace(r.Model + " · " + r.Metric)}
	lo, hi := st.Values[0].Value, st.Values[0].Value
	for _, v := range st.Values {
		lo, hi = min(lo, v.Value), max(hi, v.Value)
	}
	winner := -1
	if b.Winner != nil {
		winner = b.Winner.Rank
	}
	if len(st.Values) <= maxBarNodes {
		scale := 0.0
		if hi > 0 {
			scale = chartBarWidth / hi
		}
		c.W = chartWidth
		c.H = 8 + len(st.Values)*chartRowHeight + 8
		for i, v := range st.Values {
			y := 8 + float64(i*chartRowHeight)
			w := max(0, v.Value*scale)
			class := "bar"
			if v.Rank == winner {
				class = "bar win"
			}
			label := nodeLabel(s, v.Rank)
			c.Bars = append(c.Bars, bar{X: chartLabelWidth, Y: y, W: max(w, 1), H: chartRowHeight - 4, LabelX: chartLabelWidth - 6,
				Label: label, Value: FormatStat(v.Value), Class: class, Tip: label + ": " + FormatStat(v.Value)})
		}
		c.MedianX = chartLabelWidth + max(0, st.Median*scale)
		c.AxisY = float64(c.H - 4)
		c.Note = "dashed line: median; highlighted: the winning node"
		return c
	}
	c.Histogram = true
	c.W, c.H = chartWidth, histogramHeight+30
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
	for i, n := range counts {
		if n == 0 {
			continue
		}
		h := float64(histogramHeight-10) * float64(n) / float64(most)
		from := lo + 2*span*float64(i)/histogramBins
		c.Bars = append(c.Bars, bar{X: plotX + float64(i)*bw, Y: float64(histogramHeight) - h, W: bw - 1, H: h, Class: "bar",
			Tip: fmt.Sprintf("%d nodes from %s to %s", n, FormatStat(from), FormatStat(from+2*span/histogramBins))})
	}
	c.AxisY = histogramHeight
	c.MedianX = plotX
	c.MedianX = plotX + plotW*spanFraction(st.Median, lo, span)
	c.Left, c.Right = st.Min, st.Max
	c.Note = fmt.Sprintf("%d nodes in %d bins (tallest: %d nodes); dashed line: median", len(st.Values), histogramBins, most)
	return c
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

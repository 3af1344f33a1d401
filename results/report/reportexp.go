package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/results"
)

// The report of a job with an experiment: a scaling chart per metric and combination of
// the other parameters (median against nodes, the medians' intervals as error bars, the
// ideal line from the fewest nodes), the variant table, and a strip of trials per row
// (every trial a dot: measured, warmup, outlier, failed). Trial runs that failed keep their
// own sections below, for their failed nodes and diagnostics.

// maxExpRows is how many rows of an experiment the report's table shows (all are in perf.csv).
const maxExpRows = 500

// maxScalingCharts bounds the scaling charts of one report.
const maxScalingCharts = 24

// maxFailedTrialSections bounds the sections of failed trial runs.
const maxFailedTrialSections = 20

type expView struct {
	X          *results.ExperimentSummary
	Params     []string
	Rows       []expRowView
	HiddenRows int
	Scaling    []scaleChart
	MoreCharts int
	FailedRuns int // failed trial runs beyond those shown
	Plan       string
	// ShowModel and ShowKey: a column only when some row says more than the benchmark's
	// name and "-" there.
	ShowModel, ShowKey bool
}

type expRowView struct {
	Benchmark, Model, Metric, Key string
	Params                        []string
	Trials, Median, Interval, CV  string
	Outliers, Status, Reason      string
	Strip                         trialStrip
}

// trialStrip is a row's trials on one axis.
type trialStrip struct {
	W, H           float64
	Dots           []trialDot
	AxisLo, AxisHi string
	MedianX        float64
}

type trialDot struct {
	X, Y  float64
	Class string // measured, warmup, outlier
	Tip   string
}

// scaleChart is one metric's scaling against nodes.
type scaleChart struct {
	Title, Note          string
	W, H                 float64
	PlotL, PlotR         float64
	PlotT, PlotB         float64
	Line, Ideal          string // SVG polyline points
	Points               []scalePoint
	XTicks, YTicks       []tick
	XLabel, YLabel       string
	HasIdeal, Guessed    bool
	IdealNote, Direction string
}

type scalePoint struct {
	X, Y, YLo, YHi float64
	Tip            string
}

func newExpView(s *results.Summary) *expView {
	x := s.Experiment
	v := &expView{X: x, Params: x.Params}
	v.Plan = fmt.Sprintf("%d variants × (%d warmup + %d measured) trials, order %s", len(x.Variants), x.Warmup, x.Repeat, x.Order)
	if x.Seed != nil {
		v.Plan += fmt.Sprintf(" (seed %d)", *x.Seed)
	}
	for i, r := range x.Rows {
		if i == maxExpRows {
			v.HiddenRows = len(x.Rows) - maxExpRows
			break
		}
		rv := expRowView{Benchmark: r.Benchmark, Model: r.Model, Metric: results.Dash(r.Metric), Key: results.KeyText(r.Identity, r.Occurrence),
			Status: r.Status, Reason: r.Reason, Trials: strconv.Itoa(r.Stats.Trials), Median: "-", Interval: "-", CV: "-", Outliers: "-"}
		va := x.VariantOf(r)
		for _, p := range x.Params {
			val, ok := va.Param(p)
			if !ok {
				val = "-"
			}
			rv.Params = append(rv.Params, val)
		}
		st := r.Stats
		if r.Failed > 0 {
			rv.Trials += fmt.Sprintf(" (+%d failed)", r.Failed)
		}
		if st.Trials > 0 {
			rv.Median, rv.CV = readable(st.Median), percent(st.CV)
		}
		if st.Trials > 1 {
			rv.Interval = fmt.Sprintf("%s – %s (%s)", readable(st.CILow), readable(st.CIHigh), percent(st.CICoverage))
		}
		if len(st.Outliers) > 0 {
			parts := make([]string, len(st.Outliers))
			for i, o := range st.Outliers {
				parts[i] = strconv.Itoa(o)
			}
			rv.Outliers = "trial " + strings.Join(parts, ", ")
		}
		rv.Strip = newTrialStrip(r)
		v.ShowModel = v.ShowModel || rv.Model != rv.Benchmark
		v.ShowKey = v.ShowKey || rv.Key != "-"
		v.Rows = append(v.Rows, rv)
	}
	for i, sc := range x.Scaling {
		if i == maxScalingCharts {
			v.MoreCharts = len(x.Scaling) - maxScalingCharts
			break
		}
		v.Scaling = append(v.Scaling, newScaleChart(sc))
	}
	return v
}

// newTrialStrip places a row's trials on an axis from the smallest to the largest value.
func newTrialStrip(r results.ExperimentRow) trialStrip {
	st := trialStrip{W: 150, H: 22}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range r.Trials {
		if t.HasValue {
			lo, hi = math.Min(lo, t.Value), math.Max(hi, t.Value)
		}
	}
	if math.IsInf(lo, 0) {
		return st
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi), 1)
		lo -= span / 2
		hi += span / 2
		span = hi - lo
	}
	const pad = 8.0
	xOf := func(v float64) float64 { return pad + (v-lo)/span*(st.W-2*pad) }
	st.AxisLo, st.AxisHi = readable(lo), readable(hi)
	for _, t := range r.Trials {
		if !t.HasValue {
			continue
		}
		d := trialDot{X: xOf(t.Value), Y: 11, Class: "measured", Tip: fmt.Sprintf("trial %d: %s", t.VariantTrial, readable(t.Value))}
		switch {
		case t.Warmup:
			d.Class, d.Tip = "warmup", d.Tip+" (warmup, not counted)"
		case t.Outlier:
			d.Class, d.Tip = "outlier", d.Tip+" (outlier)"
		}
		st.Dots = append(st.Dots, d)
	}
	if r.Stats.Trials > 0 {
		st.MedianX = xOf(r.Stats.Median)
	}
	return st
}

// newScaleChart draws the medians against nodes on linear axes from 0, with each median's
// interval as an error bar and the ideal line (perfect scaling from the fewest nodes).
func newScaleChart(sc results.ScalingSummary) scaleChart {
	c := scaleChart{W: 420, H: 250, PlotL: 56, PlotR: 400, PlotT: 16, PlotB: 210, Direction: sc.Better, Guessed: sc.Guessed}
	title := sc.Model + " " + sc.Metric
	if k := results.KeyText(sc.Identity, sc.Occurrence); k != "-" {
		title += " [" + k + "]"
	}
	if len(sc.Params) > 0 {
		title += " · " + results.ParamText(sc.Params)
	}
	c.Title = title
	c.XLabel, c.YLabel = "nodes", sc.Metric
	maxN, maxV := 0, 0.0
	for i, p := range sc.Points {
		maxN = max(maxN, p.Nodes)
		maxV = math.Max(maxV, math.Max(p.Value, sc.Intervals[i][1]))
	}
	base := sc.Points[0]
	ideal := func(n int) float64 {
		if sc.Better == results.HigherIsBetter {
			return base.Value * float64(n) / float64(base.Nodes)
		}
		return base.Value * float64(base.Nodes) / float64(n)
	}
	c.HasIdeal = base.Value > 0 && base.Nodes > 0
	if c.HasIdeal {
		maxV = math.Max(maxV, ideal(maxN))
		maxV = math.Max(maxV, ideal(base.Nodes))
	}
	if maxV <= 0 || maxN <= 0 {
		return c
	}
	top := niceCeil(maxV)
	xOf := func(n int) float64 { return c.PlotL + float64(n)/float64(maxN)*(c.PlotR-c.PlotL) }
	yOf := func(v float64) float64 { return c.PlotB - math.Max(0, v)/top*(c.PlotB-c.PlotT) }
	var line, idl []string
	for i, p := range sc.Points {
		iv := sc.Intervals[i]
		sp := scalePoint{X: xOf(p.Nodes), Y: yOf(p.Value), YLo: yOf(iv[0]), YHi: yOf(iv[1]),
			Tip: fmt.Sprintf("%d nodes: median %s (interval %s – %s), speedup %s, efficiency %s", p.Nodes, readable(p.Value), readable(iv[0]), readable(iv[1]),
				readable(p.Speedup), percent(p.Efficiency))}
		c.Points = append(c.Points, sp)
		line = append(line, fmt.Sprintf("%.1f,%.1f", sp.X, sp.Y))
		if c.HasIdeal {
			idl = append(idl, fmt.Sprintf("%.1f,%.1f", sp.X, yOf(ideal(p.Nodes))))
		}
		c.XTicks = append(c.XTicks, tick{X: sp.X, Label: strconv.Itoa(p.Nodes)})
	}
	c.Line, c.Ideal = strings.Join(line, " "), strings.Join(idl, " ")
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{X: yOf(v), Label: readable(v)})
	}
	last := sc.Points[len(sc.Points)-1]
	c.Note = fmt.Sprintf("%d → %d nodes: speedup %s, parallel efficiency %s; %s is better", base.Nodes, last.Nodes, readable(last.Speedup), percent(last.Efficiency), sc.Better)
	if sc.Guessed {
		c.Note += " (guessed from the metric's name)"
	}
	return c
}

// niceCeil is the smallest 1, 2 or 5 times a power of ten at or above v (> 0).
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

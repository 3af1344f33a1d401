package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/compare"
	"github.com/benchctl/benchctl/results/stats"
)

// What report.html shows of a job's past: each row's trend over the manifest's last
// TrendJobs collected jobs (this one highlighted), and this job against the manifest's
// reference job.

// TrendJobs is how many jobs a report's trend shows, this one included.
const TrendJobs = 20

// maxTrendCharts bounds the trend charts of one report.
const maxTrendCharts = 12

// View is what report.html shows: a collected job's summary, and what collect found
// of the job's past. Collect builds it (Collection.Report) and hands it to WriteView;
// a view of a summary alone (WriteReport) has neither trend nor reference.
type View struct {
	Summary *results.Summary
	// Trend is the rows of the manifest's last TrendJobs collected jobs, this job's last.
	Trend []compare.HistoryRow
	// VsRef is this job against the manifest's reference job, RefName (nil: no reference,
	// or this job is it).
	VsRef   *compare.Comparison
	RefName string
}

// NewView is the report's view of s: with what it shows of the past, the trend and
// the comparison against the reference. Nothing of the past is an error: a shared
// directory without history or reference gives a view without them.
func NewView(l jobdir.Layout, dir jobdir.Dir, s *results.Summary, perf *results.Table) *View {
	v := &View{Summary: s}
	if s.JobJSON() == nil || s.Name == "" {
		return v
	}
	rows, err := compare.History(l, compare.HistoryOptions{Manifest: s.Name, Threshold: 5})
	if err == nil {
		var past []compare.HistoryRow
		for _, r := range rows {
			if r.Job != dir.JobID {
				past = append(past, r)
			}
		}
		jobs := map[string]bool{}
		for i := len(past) - 1; i >= 0; i-- {
			if len(jobs) == TrendJobs-1 && !jobs[past[i].Job] {
				past = past[i+1:]
				break
			}
			jobs[past[i].Job] = true
		}
		v.Trend = append(past, compare.HistoryRowsOf(perf, s.JobJSON(), dir)...)
	}
	ref, err := l.ReadReference(s.Name)
	if err != nil || ref == nil || ref.Job == dir.JobID {
		return v
	}
	rd, err := l.Find(ref.Job, ref.Attempt)
	if err != nil {
		return v
	}
	base, baseRules, err := compare.ReadJobSource(rd)
	if err != nil {
		return v
	}
	rules := compare.JudgeRules(results.MetricRules(s.JobJSON().Manifest.Metrics), baseRules)
	cur := compare.CompareSource{Table: perf, Name: "this job"}
	if s.Experiment != nil {
		cur.Trials = experimentTrials(s.Experiment)
	}
	v.VsRef = compare.CompareSources(base, cur, compare.CompareOptions{Threshold: 5, Rules: rules})
	v.RefName = jobdir.Name(rd.JobID, rd.Attempt)
	return v
}

// experimentTrials is each experiment row's measured values, by perf.csv row.
func experimentTrials(x *results.ExperimentSummary) [][]float64 {
	out := make([][]float64, len(x.Rows))
	for i, r := range x.Rows {
		out[i] = r.Measured()
	}
	return out
}

// trendChart is one row's values over jobs.
type trendChart struct {
	Title  string
	W, H   float64
	Line   string
	Points []trendPoint
	Lo, Hi string
	Note   string
}

type trendPoint struct {
	X, Y    float64
	Current bool
	Tip     string
}

func newTrendCharts(trend []compare.HistoryRow, current string) []trendChart {
	type series struct {
		title string
		rows  []compare.HistoryRow
	}
	byID := map[string]*series{}
	var order []string
	for _, r := range trend {
		id := compare.HistoryRowID(r)
		se := byID[id]
		if se == nil {
			title := strings.Join(compare.NonEmpty(r.Model, r.Metric, r.Key, r.Variant), " · ")
			se = &series{title: title}
			byID[id] = se
			order = append(order, id)
		}
		se.rows = append(se.rows, r)
	}
	var out []trendChart
	for _, id := range order {
		se := byID[id]
		if len(se.rows) < 2 || len(out) == maxTrendCharts {
			continue
		}
		c := trendChart{Title: se.title, W: 300, H: 70}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range se.rows {
			if v, ok := stats.ParsePerformance(r.Performance); ok {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if math.IsInf(lo, 0) {
			continue
		}
		span := hi - lo
		if span == 0 {
			span = math.Max(math.Abs(hi), 1)
		}
		const pad = 8.0
		var pts []string
		for i, r := range se.rows {
			v, ok := stats.ParsePerformance(r.Performance)
			if !ok {
				continue
			}
			x := pad + float64(i)/float64(len(se.rows)-1)*(c.W-2*pad)
			y := c.H - pad - (v-lo)/span*(c.H-2*pad)
			p := trendPoint{X: x, Y: y, Current: r.Job == current, Tip: fmt.Sprintf("job %s (%s): %s", r.Job, r.Started.UTC().Format("2006-01-02 15:04"), readable(v))}
			if r.Verdict != "" && !p.Current {
				p.Tip += " · " + r.Verdict + " against the reference"
			}
			c.Points = append(c.Points, p)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		c.Line = strings.Join(pts, " ")
		c.Lo, c.Hi = readable(lo), readable(hi)
		c.Note = fmt.Sprintf("%d jobs, %s to %s", len(se.rows), c.Lo, c.Hi)
		out = append(out, c)
	}
	return out
}

package report

import (
	"fmt"
	"github.com/benchctl/benchctl/internal/mean"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
)

// The report's telemetry timelines: how many nodes get one (throttled nodes first), and how
// many points a line has at most.
const (
	maxTimelines    = 8
	timelinePoints  = 240
	timelineW       = 640.0
	timelineH       = 90.0
	timelineLeft    = 150.0
	timelineRight   = 60.0
	timelinePadding = 6.0
)

// telView is a benchmark's telemetry in the report.
type telView struct {
	Line        string // energy, power, performance per watt
	Throttled   string // which nodes were throttled, and by what
	Unavailable string // why some or all nodes have none
	Timelines   []timeline
	More        int // sampled nodes without a timeline here
}

// timeline is one node's power (the sum over its GPUs) and graphics clock (their mean) over
// the run, with the stretches where a limit was active shaded.
type timeline struct {
	Label     string
	Href      string
	Throttled bool
	W, H      float64
	Left      float64
	Power     string // SVG path data
	Clock     string
	MaxPower  string // the scale's top, for the axis labels
	MaxClock  string
	Duration  string
	Marks     []mark
	Err       string // the series could not be read (its figures are still in the line above)
}

type mark struct{ X, W float64 }

// newTelView is b's telemetry for the report, reading up to maxTimelines nodes' series from
// the job folder at dir.
func newTelView(dir string, b *results.BenchmarkSummary) *telView {
	t := b.Telemetry
	if t == nil {
		return nil
	}
	v := &telView{}
	if t.Nodes == 0 {
		v.Unavailable = "no GPU telemetry: " + t.Unavailable
		return v
	}
	var parts []string
	if t.EnergyJ != nil {
		parts = append(parts, "energy "+readableUnit(*t.EnergyJ, "J"))
	}
	if t.AvgPowerW != nil {
		parts = append(parts, "average power "+readableUnit(*t.AvgPowerW, "W"))
	}
	if t.PeakPowerW != nil {
		parts = append(parts, "peak "+readableUnit(*t.PeakPowerW, "W")+" on a node")
	}
	for _, r := range b.Rows {
		if r.PerfPerWatt != nil {
			parts = append(parts, fmt.Sprintf("%s %s per watt", readable(*r.PerfPerWatt), r.Metric))
			break
		}
	}
	v.Line = fmt.Sprintf("over %s: %s", results.Plural(t.Nodes, "node", "nodes"), strings.Join(parts, " · "))
	if t.NodesWithout > 0 {
		v.Unavailable = fmt.Sprintf("%s without telemetry: %s", results.Plural(t.NodesWithout, "node", "nodes"), t.Unavailable)
	}
	if t.NodesMissing > 0 {
		v.Unavailable = strings.TrimPrefix(v.Unavailable+"; ", "; ") + fmt.Sprintf("%s left no telemetry of this run (killed before its end?): the sums are of the others", results.Plural(t.NodesMissing, "node", "nodes"))
	}
	v.Throttled = results.ThrottleNote(t)
	nodes := slices.Clone(t.ThrottledNodes)
	for _, n := range t.PerNode {
		if !n.Throttled {
			nodes = append(nodes, n)
		}
	}
	for _, n := range nodes {
		if len(v.Timelines) == maxTimelines {
			v.More++
			continue
		}
		v.Timelines = append(v.Timelines, readTimeline(dir, n))
	}
	return v
}

// readableUnit is v with k or M before the unit when it is large.
func readableUnit(v float64, unit string) string {
	switch {
	case v >= 1e6:
		return readable(v/1e6) + " M" + unit
	case v >= 1e3:
		return readable(v/1e3) + " k" + unit
	}
	return readable(v) + " " + unit
}

// bin is one point of a timeline: per GPU, the mean power over the rows that fell in it.
type bin struct {
	power           map[int]*mean.Mean
	clock           mean.Mean
	throttled, seen int
}

func readTimeline(dir string, n results.NodeTelemetry) timeline {
	tl := timeline{Label: jobdir.NodeName(n.Rank, n.Host), Href: n.Series, Throttled: n.Throttled, W: timelineW, H: timelineH, Left: timelineLeft}
	var rows []jobdir.TelemetryRow
	_, err := jobdir.ReadTelemetrySeries(dir, filepath.FromSlash(n.Series), func(r jobdir.TelemetryRow) {
		if len(rows) < 4*jobdir.TelemetryLevelRows*64 { // bounded: 64 GPUs' worth of four levels
			rows = append(rows, r)
		}
	})
	if err != nil {
		tl.Err = err.Error()
	}
	end := 0.0
	for _, r := range rows {
		end = max(end, r.T+r.DT)
	}
	if len(rows) == 0 || end <= 0 {
		if tl.Err == "" {
			tl.Err = "no samples"
		}
		return tl
	}
	tl.Duration = readable(end) + " s"
	bins := make([]bin, timelinePoints)
	for _, r := range rows {
		i := max(0, min(int(r.T/end*timelinePoints), timelinePoints-1)) // the reader left out rows outside [0, end]
		b := &bins[i]
		if r.PowerW != nil {
			if b.power == nil {
				b.power = map[int]*mean.Mean{}
			}
			m := b.power[r.GPU]
			if m == nil {
				m = &mean.Mean{}
				b.power[r.GPU] = m
			}
			m.Add(*r.PowerW)
		}
		if r.GFXMHz != nil {
			b.clock.Add(*r.GFXMHz)
		}
		b.throttled += r.Throttled
		b.seen += r.Throttle
	}
	power := make([]*float64, timelinePoints)
	clock := make([]*float64, timelinePoints)
	var maxP, maxC float64
	for i, b := range bins {
		if b.power != nil {
			sum := 0.0
			for _, m := range b.power {
				sum += *m.Value()
			}
			power[i] = &sum
			maxP = max(maxP, sum)
		}
		if c := b.clock.Value(); c != nil {
			clock[i] = c
			maxC = max(maxC, *c)
		}
		if b.throttled > 0 && b.throttled*20 > b.seen { // more than 5 % of the bin's samples
			x := timelineLeft + float64(i)*(timelineW-timelineLeft-timelineRight)/timelinePoints
			tl.Marks = append(tl.Marks, mark{X: x, W: (timelineW - timelineLeft - timelineRight) / timelinePoints})
		}
	}
	tl.Power, tl.MaxPower = svgPath(power, maxP), readableUnit(maxP, "W")
	tl.Clock, tl.MaxClock = svgPath(clock, maxC), readable(maxC)+" MHz"
	return tl
}

// svgPath draws the points (nil: a gap) scaled to top within the timeline's plot area.
func svgPath(ps []*float64, top float64) string {
	if top <= 0 {
		return ""
	}
	var b strings.Builder
	plotW := timelineW - timelineLeft - timelineRight
	pen := false
	for i, p := range ps {
		if p == nil {
			pen = false
			continue
		}
		x := timelineLeft + (float64(i)+0.5)*plotW/float64(len(ps))
		y := timelinePadding + (1-*p/top)*(timelineH-2*timelinePadding)
		if pen {
			b.WriteString("L")
		} else {
			b.WriteString("M")
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + " " + strconv.FormatFloat(y, 'f', 1, 64) + " ")
		pen = true
	}
	return strings.TrimSpace(b.String())
}

package report

import (
	"math"
	"strings"

	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// maxSlowest is how many of the slowest nodes the report names under a chart.
const maxSlowest = 5

// slowNode is one of the slowest nodes of a row, as the report names it.
type slowNode struct {
	Label string // "3-n3"
	Delta string // "−4.1 % vs median" for the first, "−3.2 %" after it
}

// slowestNodes names the nodes of slowest(r, n) with how far each is from the median.
func slowestNodes(s *results.Summary, r results.RowSummary, worst []stats.NodeValue) []slowNode {
	out := make([]slowNode, len(worst))
	for i, v := range worst {
		out[i].Label = nodeLabel(s, v.Rank)
		switch {
		case r.Stats.Median == 0:
			out[i].Delta = readable(v.Value)
		case i == 0:
			out[i].Delta = signedPercent((v.Value-r.Stats.Median)/math.Abs(r.Stats.Median)) + " vs median"
		default:
			out[i].Delta = signedPercent((v.Value - r.Stats.Median) / math.Abs(r.Stats.Median))
		}
	}
	return out
}

// slowestText is the line under a chart: "slowest: 3-n3 (−4.1 % vs median), 7-n7 (−3.2 %)",
// or "" for none.
func slowestText(nodes []slowNode) string {
	if len(nodes) == 0 {
		return ""
	}
	parts := make([]string, len(nodes))
	for i, x := range nodes {
		parts[i] = x.Label + " (" + x.Delta + ")"
	}
	return "slowest: " + strings.Join(parts, ", ")
}

// slowest is up to n nodes that did worst against the median of a row, worst first (ties to
// the lower rank). Worst is the lowest value, or the highest for a metric that reads as a
// time (latency, seconds, ...). Nodes within 0.05 % of the median are left out. One pass,
// kept sorted: a job of millions of nodes must not sort them all for five names.
func slowest(r results.RowSummary, n int) []stats.NodeValue {
	st := r.Stats
	if st.Nodes < 2 || n <= 0 {
		return nil
	}
	sign := 1.0 // how much worse than the median a value is: median - v, or v - median
	if results.Direction(results.AutoDirection, r.Metric) == results.LowerIsBetter {
		sign = -1
	}
	worse := func(v float64) float64 { return sign * (st.Median - v) }
	minGap := math.Abs(st.Median) * 0.0005
	worst := make([]stats.NodeValue, 0, n)
	for _, v := range st.Values {
		w := worse(v.Value)
		if !(w > minGap) {
			continue
		}
		i := len(worst)
		for i > 0 && w > worse(worst[i-1].Value) {
			i--
		}
		if i == n {
			continue
		}
		if len(worst) < n {
			worst = append(worst, stats.NodeValue{})
		}
		copy(worst[i+1:], worst[i:])
		worst[i] = v
	}
	return worst
}

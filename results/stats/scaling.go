package stats

import (
	"cmp"
	"slices"
)

// ScalingPoint is one node count of a scaling study: the figure measured there (a median
// over trials) and, from Scaling, how it compares with the smallest node count.
type ScalingPoint struct {
	Nodes int     `json:"nodes"`
	Value float64 `json:"value"`
	// Speedup is how many times better than at the smallest count (value/base for a
	// figure where higher is better, base/value for one where lower is); Efficiency is
	// Speedup divided by the nodes' ratio (1: ideal). Both 0 where the base or the value is
	// 0 or of the other sign.
	Speedup    float64 `json:"speedup"`
	Efficiency float64 `json:"efficiency"`
}

// Scaling computes the speedup and the parallel efficiency of each point against the point
// with the fewest nodes, sorted by nodes. higherBetter says the metric's direction: a
// throughput scales up, a time scales down.
func Scaling(points []ScalingPoint, higherBetter bool) []ScalingPoint {
	out := slices.Clone(points)
	slices.SortStableFunc(out, func(a, b ScalingPoint) int { return cmp.Compare(a.Nodes, b.Nodes) })
	if len(out) == 0 || out[0].Nodes <= 0 {
		return out
	}
	base := out[0]
	for i := range out {
		p := &out[i]
		p.Speedup, p.Efficiency = 0, 0
		if base.Value == 0 || p.Value == 0 || (base.Value > 0) != (p.Value > 0) || p.Nodes <= 0 {
			continue
		}
		if higherBetter {
			p.Speedup = finite(p.Value / base.Value)
		} else {
			p.Speedup = finite(base.Value / p.Value)
		}
		p.Efficiency = finite(p.Speedup * float64(base.Nodes) / float64(p.Nodes))
	}
	return out
}

package report

import (
	"fmt"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

func TestSlowestNodes(t *testing.T) {
	s := (&results.Summary{}).WithJob(&jobdir.Job{Nodes: []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}})
	row := func(metric string, vals ...float64) results.RowSummary {
		r := results.RowSummary{Model: "m", Metric: metric, Stats: stats.Stats{Nodes: len(vals)}}
		for i, v := range vals {
			r.Stats.Values = append(r.Stats.Values, stats.NodeValue{Rank: i, Value: v})
		}
		acc := stats.Accumulator{}
		for i, v := range vals {
			acc.Add(i, v, fmt.Sprint(v))
		}
		r.Stats.Median = acc.Stats().Median
		return r
	}
	for _, c := range []struct {
		name string
		r    results.RowSummary
		n    int
		want string
	}{
		{"throughput: the lowest", row("samples_per_second", 1000, 1000, 1000, 959, 1000, 1000, 968, 1000, 1000.2), 5,
			"slowest: 3-n3 (\u22124.1\u202f% vs median), 6-n6 (\u22123.2\u202f%)"},
		{"at most n, worst first, ties to the lower rank", row("GB/s", 90, 100, 95, 95, 100, 100, 100), 2,
			"slowest: 0-n0 (\u221210.0\u202f% vs median), 2-n2 (\u22125.0\u202f%)"},
		{"latency: the highest", row("latency_ms", 2.0, 2.0, 2.1, 2.0, 1.9), 5,
			"slowest: 2-n2 (+5.0\u202f% vs median)"},
		{"within 0.05 % of the median: nobody", row("samples_per_second", 1000, 1000.4, 999.7), 5, ""},
		{"one node", row("samples_per_second", 5), 5, ""},
		{"median zero: values instead", row("delta", 0, 0, -2), 5, "slowest: 2-n2 (\u22122)"},
	} {
		if got := slowestText(slowestNodes(s, c.r, slowest(c.r, c.n))); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// Millions of nodes: one pass, no sort of them all.
func TestSlowestManyNodes(t *testing.T) {
	const n = 200000
	r := results.RowSummary{Metric: "x", Stats: stats.Stats{Nodes: n, Median: 1000}}
	for i := range n {
		r.Stats.Values = append(r.Stats.Values, stats.NodeValue{Rank: i, Value: 1000 - float64(i%1000)/100})
	}
	got := slowest(r, maxSlowest)
	if len(got) != maxSlowest || got[0].Rank != 999 || got[1].Rank != 1999 || got[4].Value != 1000-9.99 {
		t.Errorf("slowest %+v", got)
	}
	if allocs := testing.AllocsPerRun(3, func() { slowest(r, maxSlowest) }); allocs > 1 {
		t.Errorf("%v allocations", allocs)
	}
}

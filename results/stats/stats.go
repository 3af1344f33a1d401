package stats

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Stats summarises the values that several nodes reported for one row key. Min and Max are
// kept as the nodes wrote them; the others are computed over float64 values. Stdev is the
// sample standard deviation (n-1; 0 for one node) and CV is Stdev/Mean (0 when Mean is 0).
//
// MinValue and MaxValue are Min and Max as numbers (summary.json's readers compute with them).
type Stats struct {
	Nodes    int         `json:"nodes"`
	Min      string      `json:"min"`
	MinValue float64     `json:"minValue"`
	MinRank  int         `json:"minRank"`
	Max      string      `json:"max"`
	MaxValue float64     `json:"maxValue"`
	MaxRank  int         `json:"maxRank"`
	Mean     float64     `json:"mean"`
	Median   float64     `json:"median"`
	Stdev    float64     `json:"stdev"`
	CV       float64     `json:"cv"`
	Values   []NodeValue `json:"values"` // one per reporting node, by rank
}

// NodeValue is one node's value for a row key.
type NodeValue struct {
	Rank  int     `json:"rank"`
	Value float64 `json:"value"`
}

// Accumulator gathers one row key's values as they stream in: one (rank, value) pair per
// node, which is what an exact median needs.
type Accumulator struct {
	values         []nodeValue
	minRaw, maxRaw string
	minV, maxV     float64
	minRank        int32
	maxRank        int32
}

type nodeValue struct {
	v    float64
	rank int32
}

// Add records a node's value. Ties for min and max go to the lower rank, so that the
// result does not depend on the order nodes are read in.
func (a *Accumulator) Add(rank int, v float64, raw string) {
	r := int32(rank)
	if len(a.values) == 0 || v < a.minV || (v == a.minV && r < a.minRank) {
		a.minV, a.minRaw, a.minRank = v, raw, r
	}
	if len(a.values) == 0 || v > a.maxV || (v == a.maxV && r < a.maxRank) {
		a.maxV, a.maxRaw, a.maxRank = v, raw, r
	}
	a.values = append(a.values, nodeValue{v: v, rank: r})
}

// Stats computes the summary. The values are sorted first, so the sums (and their rounding)
// do not depend on the order the nodes were read in.
func (a *Accumulator) Stats() Stats {
	n := len(a.values)
	if n == 0 {
		return Stats{}
	}
	vals := slices.Clone(a.values)
	slices.SortFunc(vals, func(x, y nodeValue) int { return cmp.Or(cmp.Compare(x.v, y.v), cmp.Compare(x.rank, y.rank)) })
	s := Stats{Nodes: n, Min: strings.TrimSpace(a.minRaw), MinValue: a.minV, MinRank: int(a.minRank), Max: strings.TrimSpace(a.maxRaw), MaxValue: a.maxV, MaxRank: int(a.maxRank)}
	if n%2 == 1 {
		s.Median = vals[n/2].v
	} else {
		s.Median = vals[n/2-1].v/2 + vals[n/2].v/2
	}
	// Welford on values scaled by the largest magnitude: neither a plain sum nor the squared
	// deviations of values near float64's limits overflow.
	// A power of two, so that scaling is exact and the figures are those of the plain sums.
	_, exp := math.Frexp(math.Max(math.Abs(vals[0].v), math.Abs(vals[n-1].v)))
	scale := math.Ldexp(1, exp-1) // the largest value scaled is in [1, 2)
	var mean, m2 float64
	for i, x := range vals {
		v := x.v / scale
		d := v - mean
		mean += d / float64(i+1)
		m2 += d * (v - mean)
	}
	s.Mean = finite(mean * scale)
	if n > 1 {
		s.Stdev = finite(math.Sqrt(m2/float64(n-1)) * scale)
	}
	if s.Mean != 0 {
		s.CV = finite(s.Stdev / math.Abs(s.Mean))
	}
	slices.SortFunc(vals, func(x, y nodeValue) int { return cmp.Compare(x.rank, y.rank) })
	s.Values = make([]NodeValue, n)
	for i, x := range vals {
		s.Values[i] = NodeValue{Rank: int(x.rank), Value: x.v}
	}
	return s
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// ParsePerformance reads a performance value as a finite number; "1.50", " 7 ", "1e3" do.
func ParsePerformance(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// FormatStat writes a computed statistic for a CSV or a table: about six significant
// digits, never an exponent for ordinary magnitudes, no trailing zeros ("14164.3", "0.0125").
func FormatStat(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	abs := math.Abs(v)
	if abs < 1e-6 || abs >= 1e15 {
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	dec := max(0, 6-(int(math.Floor(math.Log10(abs)))+1))
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

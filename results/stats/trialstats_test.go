package stats

import (
	"math"
	"slices"
	"testing"
)

func trialValues(vs ...float64) []TrialValue {
	out := make([]TrialValue, len(vs))
	for i, v := range vs {
		out[i] = TrialValue{Trial: i + 1, Value: v}
	}
	return out
}

// Against values computed by hand: the median, the mean and the sample deviation of
// 1..4; the order statistics and coverage of the median's interval (coverage 1-2·P(B≤l-1),
// B ~ Binomial(n, 1/2)).
func TestTrialStatsByHand(t *testing.T) {
	s := ComputeTrialStats(trialValues(4, 1, 3, 2))
	if s.Trials != 4 || s.Median != 2.5 || s.Mean != 2.5 || !near(s.Stdev, math.Sqrt(5.0/3)) || !near(s.CV, math.Sqrt(5.0/3)/2.5) || s.Min != 1 || s.Max != 4 {
		t.Errorf("1..4: %+v", s)
	}
	// n = 4: l = 1 covers 1 - 2/16 = 0.875 (below 95 %: the widest interval, said so).
	if s.CILow != 1 || s.CIHigh != 4 || s.CICoverage != 0.875 {
		t.Errorf("1..4 interval: [%v, %v] at %v", s.CILow, s.CIHigh, s.CICoverage)
	}
	cases := []struct {
		n, l int
		cov  float64
	}{
		{2, 1, 0.5},
		{5, 1, 1 - 2.0/32},
		{6, 1, 1 - 2.0/64},
		{10, 2, 1 - 2*11.0/1024},
		{20, 6, 1 - 2*21700.0/1048576},
	}
	for _, c := range cases {
		l, cov := medianCI(c.n, CIWanted)
		if l != c.l || !near(cov, c.cov) {
			t.Errorf("n=%d: l=%d coverage %v, want l=%d coverage %v", c.n, l, cov, c.l, c.cov)
		}
		vs := make([]float64, c.n)
		for i := range vs {
			vs[i] = float64(c.n - i) // 1..n, given in reverse
		}
		s := ComputeTrialStats(trialValues(vs...))
		if s.CILow != float64(c.l) || s.CIHigh != float64(c.n-c.l+1) {
			t.Errorf("n=%d: interval [%v, %v], want [x(%d), x(%d)]", c.n, s.CILow, s.CIHigh, c.l, c.n-c.l+1)
		}
	}
}

// The interval's stated coverage is its real one: over many samples of a skewed
// distribution, the share of intervals that hold the true median is the stated coverage
// (within the simulation's error), for small n.
func TestMedianIntervalCoverageHolds(t *testing.T) {
	rng := uint64(12345)
	next := func() float64 { // xorshift; exponential values, median ln 2
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return -math.Log(float64(rng>>11+1) / (1 << 53))
	}
	for _, n := range []int{3, 5, 8, 12, 30} {
		const runs = 20000
		hit, cov := 0, 0.0
		for range runs {
			vs := make([]float64, n)
			for i := range vs {
				vs[i] = next()
			}
			s := ComputeTrialStats(trialValues(vs...))
			cov = s.CICoverage
			if s.CILow <= math.Ln2 && math.Ln2 <= s.CIHigh {
				hit++
			}
		}
		got := float64(hit) / runs
		if sd := math.Sqrt(cov * (1 - cov) / runs); math.Abs(got-cov) > 5*sd+1e-3 {
			t.Errorf("n=%d: the interval held the median in %.4f of samples; it says %.4f", n, got, cov)
		}
	}
}

func TestTrialOutliers(t *testing.T) {
	cases := []struct {
		vs   []float64
		want []int
	}{
		{[]float64{10, 10.2, 9.9, 10.1, 15}, []int{5}},       // MAD 0.1: 15 is 33 MADs out
		{[]float64{10, 10.2, 9.9, 10.1, 10.5}, nil},          // 10.5 is 2.7 scaled MADs out
		{[]float64{3, 10, 10, 10, 10, 10}, []int{1}},         // MAD 0: the mean deviation stands in
		{[]float64{10, 10, 10}, nil},                         // all equal
		{[]float64{1, 1000}, nil},                            // two trials say nothing
		{[]float64{100, 1, 100, 99, 101, 1000}, []int{2, 6}}, // both sides
	}
	for _, c := range cases {
		if got := ComputeTrialStats(trialValues(c.vs...)).Outliers; !slices.Equal(got, c.want) {
			t.Errorf("%v: outliers %v, want %v", c.vs, got, c.want)
		}
	}
}

func TestTrialStatsEdges(t *testing.T) {
	if s := ComputeTrialStats(nil); s.Trials != 0 {
		t.Errorf("no trials: %+v", s)
	}
	s := ComputeTrialStats(trialValues(7))
	if s.Median != 7 || s.CILow != 7 || s.CIHigh != 7 || s.CICoverage != 0 || s.Stdev != 0 {
		t.Errorf("one trial: %+v", s)
	}
	big := ComputeTrialStats(trialValues(math.MaxFloat64/4, math.MaxFloat64/8, -math.MaxFloat64/4))
	if math.IsNaN(big.Mean) || math.IsInf(big.Stdev, 0) || big.Stdev == 0 {
		t.Errorf("values near float64's limits: %+v", big)
	}
	many := make([]float64, 100000)
	for i := range many {
		many[i] = float64(i % 1000)
	}
	if s := ComputeTrialStats(trialValues(many...)); s.CICoverage < CIWanted || s.CILow > s.Median || s.CIHigh < s.Median {
		t.Errorf("100000 trials: %+v", s)
	}
}

func TestScaling(t *testing.T) {
	got := Scaling([]ScalingPoint{{Nodes: 4, Value: 350}, {Nodes: 1, Value: 100}, {Nodes: 2, Value: 190}}, true)
	want := []ScalingPoint{{1, 100, 1, 1}, {2, 190, 1.9, 0.95}, {4, 350, 3.5, 0.875}}
	for i := range want {
		if got[i].Nodes != want[i].Nodes || !near(got[i].Speedup, want[i].Speedup) || !near(got[i].Efficiency, want[i].Efficiency) {
			t.Errorf("throughput: %+v, want %+v", got, want)
			break
		}
	}
	// A time scales down: 100 s on 2 nodes, 60 s on 4 is 1.67x, 83 % efficient.
	got = Scaling([]ScalingPoint{{Nodes: 2, Value: 100}, {Nodes: 4, Value: 60}}, false)
	if !near(got[1].Speedup, 100.0/60) || !near(got[1].Efficiency, 100.0/60/2) {
		t.Errorf("time: %+v", got)
	}
	got = Scaling([]ScalingPoint{{Nodes: 1, Value: 0}, {Nodes: 2, Value: 5}}, true)
	if got[1].Speedup != 0 || got[1].Efficiency != 0 {
		t.Errorf("a zero base: %+v", got)
	}
}

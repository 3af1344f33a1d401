package stats

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// The exact distribution of U against the published tables: for 4 and 4 values P(U ≤ u) is
// 1, 2, 4, 7 out of C(8, 4) = 70 for u = 0..3; for 3 and 3, P(U ≤ 0) = 1/20.
func TestUDistributionByHand(t *testing.T) {
	cdf := uDistribution(4, 4)
	for u, want := range []float64{1, 2, 4, 7} {
		if !near(cdf[u], want/70) {
			t.Errorf("m=n=4: P(U ≤ %d) = %v, want %v/70", u, cdf[u], want)
		}
	}
	if cdf[16] != 1 || !near(cdf[8]-cdf[7], 8.0/70) { // U = 8 (the middle): 8 of 70 arrangements
		t.Errorf("m=n=4: P(U ≤ 16) = %v, P(U = 8) = %v", cdf[16], cdf[8]-cdf[7])
	}
	if c := uDistribution(3, 3); !near(c[0], 1.0/20) {
		t.Errorf("m=n=3: P(U ≤ 0) = %v", c[0])
	}
	// Unequal sizes are symmetric too: P(U ≤ u) = P(U ≥ mn - u).
	c := uDistribution(3, 7)
	for u := range 21 {
		if !near(c[u], 1-c[21-u-1]) && u < 21 {
			t.Errorf("m=3, n=7: P(U ≤ %d) = %v, P(U ≥ %d) = %v", u, c[u], 21-u, 1-c[21-u-1])
		}
	}
}

// R's documented example of wilcox.test (x against y): W = 35, one-sided p 0.1272, so the
// two-sided p is 0.2544.
func TestMannWhitneyAgainstR(t *testing.T) {
	x := []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
	y := []float64{1.15, 0.88, 0.90, 0.74, 1.21}
	rt := MannWhitney(y, x, 0.05)
	if rt.U != 35 || !rt.Exact || math.Abs(rt.P-0.2544) > 0.0005 {
		t.Errorf("U %v, p %v (exact %v), want 35, 0.2544", rt.U, rt.P, rt.Exact)
	}
}

func TestHodgesLehmannByHand(t *testing.T) {
	// Differences 4-1 .. 6-3: 1 2 2 3 3 3 4 4 5; median 3. Three a side cannot reach 95 %:
	// the widest interval, [1, 5], covers 1 - 2/20 = 90 %.
	rt := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.05)
	if rt.Shift != 3 || rt.ShiftLow != 1 || rt.ShiftHigh != 5 || !near(rt.Coverage, 0.9) || !near(rt.P, 0.1) || rt.U != 9 {
		t.Errorf("%+v", rt)
	}
	// Ten a side, all new values 10 above: p is 2/C(20,10), the shift exactly 10 ± the spread.
	var base, new []float64
	for i := range 10 {
		base = append(base, float64(i))
		new = append(new, float64(i)+10.5)
	}
	rt = MannWhitney(base, new, 0.05)
	if !near(rt.P, 2.0/184756) || rt.Shift != 10.5 || rt.ShiftLow > 10.5 || rt.ShiftHigh < 10.5 || rt.Coverage < 0.95 {
		t.Errorf("%+v", rt)
	}
	// The same samples: no evidence of a shift.
	rt = MannWhitney(base, base[:9], 0.05)
	if rt.P < 0.5 || rt.Exact {
		t.Errorf("overlapping samples with ties: %+v", rt)
	}
}

// Large or tied samples use the normal approximation: equal samples give p 1, separated
// ones a tiny p; every value equal gives p 1 and a zero shift.
func TestMannWhitneyApproximation(t *testing.T) {
	var a, b []float64
	for i := range 100 {
		a = append(a, float64(i))
		b = append(b, float64(i)+1000)
	}
	if rt := MannWhitney(a, b, 0.05); rt.Exact || rt.P > 1e-10 || rt.Shift != 1000 || rt.ShiftLow > 1000 || rt.ShiftHigh < 1000 {
		t.Errorf("separated: %+v", rt)
	}
	if rt := MannWhitney(a, a, 0.05); rt.P < 0.99 || rt.Shift != 0 {
		t.Errorf("equal: %+v", rt)
	}
	if rt := MannWhitney([]float64{5, 5, 5}, []float64{5, 5}, 0.05); rt.P != 1 || rt.Shift != 0 {
		t.Errorf("constant: %+v", rt)
	}
	if rt := MannWhitney(nil, []float64{1}, 0.05); rt.U != 0 || rt.P != 0 {
		t.Errorf("empty base: %+v", rt)
	}
}

// naiveRankTest is the rank test as the listed pairwise differences give it: U by counting
// pairs, the shift and its interval from the sorted list (what MannWhitney computed before
// it stopped listing them).
func naiveRankTest(base, new []float64) (u float64, diffs []float64) {
	for _, x := range new {
		for _, b := range base {
			switch {
			case x > b:
				u++
			case x == b:
				u += 0.5
			}
			diffs = append(diffs, x-b)
		}
	}
	slices.Sort(diffs)
	return u, diffs
}

// The rank test without listing the pairs gives the listed pairs' answers: U, the shift
// (their median) and the interval's ends (their order statistics), ties and negative values
// included, for small (exact) and large (normal) samples.
func TestRankTestMatchesTheListedPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		m, n := 1+rng.IntN(40), 1+rng.IntN(40)
		if trial%10 == 0 {
			m, n = 50+rng.IntN(150), 50+rng.IntN(150)
		}
		gen := func(k int) []float64 {
			out := make([]float64, k)
			for i := range out {
				switch trial % 3 {
				case 0: // many ties
					out[i] = float64(rng.IntN(5))
				case 1:
					out[i] = rng.NormFloat64()*1e3 - 50
				default:
					out[i] = math.Round(rng.Float64()*100) / 8
				}
			}
			return out
		}
		base, new := gen(m), gen(n)
		rt := MannWhitney(base, new, 0.05)
		u, diffs := naiveRankTest(base, new)
		if rt.U != u || rt.Shift != MedianOfSorted(diffs) {
			t.Fatalf("m=%d n=%d: U %v shift %v, want %v %v", m, n, rt.U, rt.Shift, u, MedianOfSorted(diffs))
		}
		if !slices.Contains(diffs, rt.ShiftLow) || !slices.Contains(diffs, rt.ShiftHigh) || rt.ShiftLow > rt.ShiftHigh {
			t.Fatalf("m=%d n=%d: interval [%v, %v] is not two of the differences", m, n, rt.ShiftLow, rt.ShiftHigh)
		}
		d := pairDiffs{base: slices.Sorted(slices.Values(base)), new: slices.Sorted(slices.Values(new))}
		for _, k := range []int{1, len(diffs), 1 + rng.IntN(len(diffs))} {
			if got := d.kth(k); got != diffs[k-1] {
				t.Fatalf("m=%d n=%d: kth(%d) = %v, want %v", m, n, k, got, diffs[k-1])
			}
		}
	}
}

// Long samples take memory of their length, not of their pairs: 5,000 trials against 5,000
// listed 25 million differences (200 MB) before.
func TestRankTestMemoryIsLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base, new := make([]float64, 5000), make([]float64, 5000)
	for i := range base {
		base[i], new[i] = rng.NormFloat64()+100, rng.NormFloat64()+100.5
	}
	// The least of three runs: what another goroutine allocated meanwhile counts in
	// TotalAlloc too, and cannot make all three look large.
	var rt RankTest
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rt = MannWhitney(base, new, 0.05)
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > 4<<20 {
		t.Errorf("the rank test of 5,000 × 5,000 trials allocated %d MiB; its samples are 80 KiB", least>>20)
	}
	if rt.P > 1e-10 || rt.Shift < 0.4 || rt.Shift > 0.6 || rt.ShiftLow > rt.Shift || rt.ShiftHigh < rt.Shift {
		t.Errorf("%+v", rt)
	}
}

// 8,000 trials against 8,000 (measured: docs/PERFORMANCE.md).
func BenchmarkRankTest8000(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	base, new := make([]float64, 8000), make([]float64, 8000)
	for i := range base {
		base[i], new[i] = rng.NormFloat64()+100, rng.NormFloat64()+100.2
	}
	b.ReportAllocs()
	for b.Loop() {
		MannWhitney(base, new, 0.05)
	}
}

package stats

import (
	"math"
	"slices"
)

// Two samples' trials compared without assuming a distribution: the Mann-Whitney U test
// (Wilcoxon rank-sum) for whether one tends to be larger, and the Hodges-Lehmann estimate of
// the shift between them with its distribution-free confidence interval (Moses).

// RankTest is the comparison of a new sample against a base sample.
type RankTest struct {
	// U is the Mann-Whitney statistic of the new sample: how many (base, new) pairs have
	// the new value larger (ties count a half).
	U float64 `json:"u"`
	// P is the two-sided p-value of "neither sample tends to be larger".
	P float64 `json:"p"`
	// Exact says P comes from the exact distribution of U (no ties, at most exactMaxN
	// values in all); else from the normal approximation with a continuity and tie
	// correction.
	Exact bool `json:"exact"`
	// Shift is the Hodges-Lehmann estimate of new - base (the median of the pairwise
	// differences); ShiftLow and ShiftHigh bound it with coverage at least 1 - alpha where
	// the samples allow it (Coverage is the interval's own, from the same distribution of U).
	Shift     float64 `json:"shift"`
	ShiftLow  float64 `json:"shiftLow"`
	ShiftHigh float64 `json:"shiftHigh"`
	Coverage  float64 `json:"coverage"`
}

// exactMaxN bounds the samples whose U distribution is computed exactly (m + n values).
const exactMaxN = 60

// MannWhitney compares new against base at the level alpha (for the shift's interval). Both
// samples need at least one value; non-finite values must be left out by the caller.
func MannWhitney(base, new []float64, alpha float64) RankTest {
	m, n := len(base), len(new)
	var rt RankTest
	if m == 0 || n == 0 {
		return rt
	}
	// Sorted once: U from the ranks, and the pairwise differences new - base are selected
	// by their order without being listed (m·n of them would not fit for long samples).
	b, x := slices.Sorted(slices.Values(base)), slices.Sorted(slices.Values(new))
	rt.U = uStatistic(b, x)
	d := pairDiffs{base: b, new: x}
	rt.Shift = d.median()
	ties := hasTies(b, x)
	mn := float64(m * n)
	if !ties && m+n <= exactMaxN {
		cdf := uDistribution(m, n)
		u := int(rt.U)
		lower := cdf[u] // P(U ≤ u)
		upper := 1.0    // P(U ≥ u)
		if u > 0 {
			upper = 1 - cdf[u-1]
		}
		rt.P, rt.Exact = math.Min(1, 2*math.Min(lower, upper)), true
		// The interval [D(c), D(mn+1-c)] (1-based) covers the shift with probability
		// 1 - 2·P(U ≤ c-1): the largest c with that coverage at least 1 - alpha.
		c := 1
		for k := 1; k <= m*n/2; k++ {
			if 2*cdf[k-1] > alpha {
				break
			}
			c = k
		}
		rt.ShiftLow, rt.ShiftHigh = d.kth(c), d.kth(m*n+1-c)
		rt.Coverage = 1 - 2*cdf[c-1]
		if 2*cdf[0] > alpha { // too few trials: the widest interval, below the level asked
			rt.ShiftLow, rt.ShiftHigh, rt.Coverage = d.kth(1), d.kth(m*n), 1-2*cdf[0]
		}
		return rt
	}
	// Normal approximation, with the variance corrected for ties.
	mean := mn / 2
	sd := math.Sqrt(uVariance(b, x))
	if sd == 0 { // every value equal
		rt.P, rt.ShiftLow, rt.ShiftHigh = 1, rt.Shift, rt.Shift
		return rt
	}
	z := (math.Abs(rt.U-mean) - 0.5) / sd
	rt.P = math.Min(1, 2*normalUpper(math.Max(0, z)))
	zc := normalQuantile(1 - alpha/2)
	c := int(math.Floor(mean - zc*sd)) // pairs below the interval
	c = max(1, min(c, m*n/2))
	rt.ShiftLow, rt.ShiftHigh = d.kth(c), d.kth(m*n+1-c)
	rt.Coverage = 1 - 2*normalUpper((mean-(float64(c)-0.5))/sd)
	return rt
}

// uStatistic is U of the sorted sample x against the sorted sample b: the pairs (b, x)
// with x > b, a half for x == b, counted by walking both once.
func uStatistic(b, x []float64) float64 {
	u := 0.0
	lo, hi := 0, 0 // b[:lo] < v, b[:hi] <= v for the current v
	for _, v := range x {
		for lo < len(b) && b[lo] < v {
			lo++
		}
		for hi < len(b) && b[hi] <= v {
			hi++
		}
		u += float64(lo) + float64(hi-lo)/2
	}
	return u
}

// pairDiffs are the m·n differences new[i] - base[j] of two sorted samples, never listed:
// kth selects the k-th smallest by bisecting over the float64 values in their order,
// counting the differences at or below a candidate in one walk of both samples. Subtraction
// rounds monotonically, so the count is that of the listed differences, and the value found
// is one of them, exactly.
type pairDiffs struct{ base, new []float64 }

// atMost counts the differences at or below t.
func (d pairDiffs) atMost(t float64) int {
	n, i := 0, 0
	// As base[j] grows, new[i] - base[j] shrinks: the new values at or below t + base[j]
	// only grow in number.
	for _, b := range d.base {
		for i < len(d.new) && d.new[i]-b <= t {
			i++
		}
		n += i
	}
	return n
}

// kth is the k-th smallest difference, 1 ≤ k ≤ m·n.
func (d pairDiffs) kth(k int) float64 {
	lo := orderedBits(d.new[0] - d.base[len(d.base)-1]) // the smallest difference
	hi := orderedBits(d.new[len(d.new)-1] - d.base[0])  // the largest
	for lo < hi {                                       // the smallest value whose count reaches k
		mid := lo + (hi-lo)/2
		if d.atMost(fromOrderedBits(mid)) >= k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return fromOrderedBits(lo)
}

// median is the median of the differences, as medianOfSorted takes it of their list.
func (d pairDiffs) median() float64 {
	n := len(d.base) * len(d.new)
	if n%2 == 1 {
		return d.kth(n/2 + 1)
	}
	return d.kth(n/2)/2 + d.kth(n/2+1)/2
}

// orderedBits maps a float64 to a uint64 of the same order (-0 and +0 apart, which no
// count between them can tell).
func orderedBits(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func fromOrderedBits(u uint64) float64 {
	if u>>63 == 1 {
		return math.Float64frombits(u &^ (1 << 63))
	}
	return math.Float64frombits(^u)
}

// uDistribution is P(U ≤ u) for u = 0..m·n when m and n values without ties are ranked
// together at random: the number of ways to choose which m of the m+n ranks are the first
// sample's with a given rank sum, counted by dynamic programming and divided by C(m+n, m).
func uDistribution(m, n int) []float64 {
	// ways[k][s]: subsets of size k of the ranks seen so far with U-sum s, where choosing
	// rank r (0-based) as the k-th smallest adds r - (k-1) to U.
	total := m * n
	ways := make([][]float64, m+1)
	for k := range ways {
		ways[k] = make([]float64, total+1)
	}
	ways[0][0] = 1
	for r := 0; r < m+n; r++ {
		for k := min(m, r+1); k >= 1; k-- {
			add := r - (k - 1) // how many second-sample values rank below this one
			if add < 0 || add > n {
				continue
			}
			for s := total; s >= add; s-- {
				ways[k][s] += ways[k-1][s-add]
			}
		}
	}
	// ways[m][s] counts arrangements where the first sample's values exceed s pairs; U of
	// the new sample (the second) is m·n - s, and the distribution is symmetric.
	cdf := make([]float64, total+1)
	all := 0.0
	for _, w := range ways[m] {
		all += w
	}
	acc := 0.0
	for u := 0; u <= total; u++ {
		acc += ways[m][u]
		cdf[u] = acc / all
	}
	return cdf
}

// uVariance is the variance of U under the null hypothesis, corrected for ties.
func uVariance(a, b []float64) float64 {
	m, n := float64(len(a)), float64(len(b))
	all := append(slices.Clone(a), b...)
	slices.Sort(all)
	tie := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j] == all[i] {
			j++
		}
		t := float64(j - i)
		tie += t*t*t - t
		i = j
	}
	nn := m + n
	return m * n / 12 * ((nn + 1) - tie/(nn*(nn-1)))
}

func hasTies(a, b []float64) bool {
	all := append(slices.Clone(a), b...)
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			return true
		}
	}
	return false
}

// normalUpper is P(Z > z) for a standard normal Z.
func normalUpper(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// normalQuantile is the z with P(Z ≤ z) = p, 0 < p < 1.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

package results

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
	// U of new: pairs (b, x) with x > b, a half for x == b.
	diffs := make([]float64, 0, m*n)
	for _, x := range new {
		for _, b := range base {
			switch {
			case x > b:
				rt.U++
			case x == b:
				rt.U += 0.5
			}
			diffs = append(diffs, x-b)
		}
	}
	slices.Sort(diffs)
	rt.Shift = medianOfSorted(diffs)
	ties := hasTies(base, new)
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
		rt.ShiftLow, rt.ShiftHigh = diffs[c-1], diffs[m*n-c]
		rt.Coverage = 1 - 2*cdf[c-1]
		if 2*cdf[0] > alpha { // too few trials: the widest interval, below the level asked
			rt.ShiftLow, rt.ShiftHigh, rt.Coverage = diffs[0], diffs[m*n-1], 1-2*cdf[0]
		}
		return rt
	}
	// Normal approximation, with the variance corrected for ties.
	mean := mn / 2
	sd := math.Sqrt(uVariance(base, new))
	if sd == 0 { // every value equal
		rt.P, rt.ShiftLow, rt.ShiftHigh = 1, rt.Shift, rt.Shift
		return rt
	}
	z := (math.Abs(rt.U-mean) - 0.5) / sd
	rt.P = math.Min(1, 2*normalUpper(math.Max(0, z)))
	zc := normalQuantile(1 - alpha/2)
	c := int(math.Floor(mean - zc*sd)) // pairs below the interval
	c = max(1, min(c, m*n/2))
	rt.ShiftLow, rt.ShiftHigh = diffs[c-1], diffs[m*n-c]
	rt.Coverage = 1 - 2*normalUpper((mean-(float64(c)-0.5))/sd)
	return rt
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

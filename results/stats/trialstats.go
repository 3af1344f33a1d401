package stats

import (
	"math"
	"slices"
)

// TrialStats summarises the measured trials of one benchmark, variant and row key: each
// trial's value is the job's figure for that trial (picked across nodes as for a job
// without trials). Warmup trials are never in it.
type TrialStats struct {
	Trials int     `json:"trials"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	// Stdev is the sample standard deviation (n-1; 0 for one trial); CV is Stdev/|Mean|
	// (0 when Mean is 0).
	Stdev float64 `json:"stdev"`
	CV    float64 `json:"cv"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	// CILow and CIHigh are a distribution-free confidence interval of the median: two order
	// statistics of the trials, the narrowest pair whose coverage reaches CIWanted, else
	// (too few trials) the widest, the smallest and the largest. CICoverage is the
	// interval's actual coverage (the probability that it holds the true median, for any
	// continuous distribution); 0 with one trial, which gives no interval.
	CILow      float64 `json:"ciLow"`
	CIHigh     float64 `json:"ciHigh"`
	CICoverage float64 `json:"ciCoverage"`
	// Outliers are the trials (their numbers, as given to ComputeTrialStats) further from
	// the median than OutlierMADs scaled median absolute deviations: flagged, never dropped.
	Outliers []int `json:"outliers,omitempty"`
}

// CIWanted is the coverage the median's interval aims at.
const CIWanted = 0.95

// OutlierMADs is how many scaled median absolute deviations from the median make a trial
// an outlier.
const OutlierMADs = 3

// madScale makes the median absolute deviation an estimate of the standard deviation for
// normal data (1/Φ⁻¹(3/4)).
const madScale = 1.482602218505602

// meanAbsScale does the same for the mean absolute deviation (√(π/2)), the fallback when
// more than half the trials are equal and the median absolute deviation is 0.
const meanAbsScale = 1.2533141373155003

// TrialValue is one measured trial's value and its number (BENCHCTL_TRIAL).
type TrialValue struct {
	Trial int
	Value float64
}

// ComputeTrialStats summarises trials (any order; non-finite values must be left out by
// the caller).
func ComputeTrialStats(trials []TrialValue) TrialStats {
	n := len(trials)
	if n == 0 {
		return TrialStats{}
	}
	vals := make([]float64, n)
	for i, t := range trials {
		vals[i] = t.Value
	}
	slices.Sort(vals)
	s := TrialStats{Trials: n, Min: vals[0], Max: vals[n-1], Median: MedianOfSorted(vals)}
	s.Mean, s.Stdev = meanStdev(vals)
	if s.Mean != 0 {
		s.CV = finite(s.Stdev / math.Abs(s.Mean))
	}
	if n > 1 {
		lo, cov := medianCI(n, CIWanted)
		s.CILow, s.CIHigh, s.CICoverage = vals[lo-1], vals[n-lo], cov
	} else {
		s.CILow, s.CIHigh = vals[0], vals[0]
	}
	s.Outliers = outliers(trials, s.Median)
	return s
}

func MedianOfSorted(vals []float64) float64 {
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return vals[n/2-1]/2 + vals[n/2]/2
}

// meanStdev is the mean and the sample standard deviation of sorted values (Welford on
// values scaled by a power of two near the largest magnitude: nothing overflows near
// float64's limits, and the figures are those of the plain sums).
func meanStdev(sorted []float64) (mean, stdev float64) {
	n := len(sorted)
	_, exp := math.Frexp(math.Max(math.Abs(sorted[0]), math.Abs(sorted[n-1])))
	scale := math.Ldexp(1, exp-1)
	var m, m2 float64
	for i, x := range sorted {
		v := x / scale
		d := v - m
		m += d / float64(i+1)
		m2 += d * (v - m)
	}
	mean = finite(m * scale)
	if n > 1 {
		stdev = finite(math.Sqrt(m2/float64(n-1)) * scale)
	}
	return mean, stdev
}

// medianCI picks the order statistics [x(l), x(n-l+1)] (1-based) of n values that bound
// their median with coverage at least want: the largest such l. The coverage of l is the
// probability that a Binomial(n, 1/2) count lies in [l, n-l]: 1 - 2·P(B ≤ l-1). When even
// l = 1 (the smallest and the largest) falls short, as for n ≤ 5 at 95 %, it is l = 1 with
// its coverage. n must be at least 2.
func medianCI(n int, want float64) (l int, coverage float64) {
	// P(B ≤ k) for B ~ Binomial(n, 1/2), summed in logs: n may be large.
	cdf, l, coverage := 0.0, 1, 1-2*math.Exp(logBinomHalf(n, 0))
	for k := 0; k < n/2; k++ {
		cdf += math.Exp(logBinomHalf(n, k))
		c := 1 - 2*cdf // the coverage of l = k+1
		if c < want {
			break
		}
		l, coverage = k+1, c
	}
	return l, coverage
}

// logBinomHalf is log(C(n, k) / 2^n).
func logBinomHalf(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c - float64(n)*math.Ln2
}

// outliers are the trials further than OutlierMADs scaled MADs from the median, by trial
// number. With the MAD 0 (more than half the trials equal), the scaled mean absolute
// deviation stands in; with both 0, every trial is equal and none is an outlier.
func outliers(trials []TrialValue, median float64) []int {
	n := len(trials)
	if n < 3 {
		return nil // two values cannot say which one is wrong
	}
	dev := make([]float64, n)
	sum := 0.0
	for i, t := range trials {
		dev[i] = math.Abs(t.Value - median)
		sum += dev[i]
	}
	sorted := slices.Clone(dev)
	slices.Sort(sorted)
	spread := MedianOfSorted(sorted) * madScale
	if spread == 0 {
		spread = sum / float64(n) * meanAbsScale
	}
	if spread == 0 || math.IsInf(spread, 0) || math.IsNaN(spread) {
		return nil
	}
	var out []int
	for i, t := range trials {
		if dev[i] > OutlierMADs*spread {
			out = append(out, t.Trial)
		}
	}
	slices.Sort(out)
	return out
}

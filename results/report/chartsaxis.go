package report

import "math"

// axis is the value range a bar chart draws: bars start at Lo and the largest ends at Hi,
// with a tick every Step from Lo. Lo is 0 unless starting at zero would hide the differences between
// nodes; the chart then says so.
type axis struct {
	Lo, Hi, Step float64
}

// Axis choice. Nodes of a cluster usually differ by a few percent: drawn from zero, a 3 %
// spread is 3 % of the bar and nobody sees it. So the axis spans at least window of the
// largest value, and 1.5 times the spread between nodes, ending at the largest value; its
// start is rounded down to a tick. A start that lands in the
// lower fifth of the range is moved to zero: the gain would be small, and zero is honest.
const (
	axisWindow    = 0.04 // of the largest value: a 2 % spread then fills about half the chart
	axisSpread    = 1.5  // times the spread between the smallest and largest value
	axisZeroBelow = 0.2  // a start below this fraction of the end becomes zero
	axisTicks     = 5    // at most about this many steps in the window
)

// valueAxis chooses the axis for values from lo to hi (lo <= hi).
func valueAxis(lo, hi float64) axis {
	if !(hi > 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsInf(lo, 0) {
		return zeroAxis(max(hi, 0))
	}
	if lo <= 0 || lo == hi { // one value, or all the same: no spread to show
		return zeroAxis(hi)
	}
	window := max(axisSpread*(hi-lo), axisWindow*hi)
	step := niceStep(window / axisTicks)
	if !(step > 0) || math.IsInf(window, 0) {
		return zeroAxis(hi)
	}
	start := math.Floor((hi-window)/step) * step
	if !(start > axisZeroBelow*hi) || start >= lo {
		return zeroAxis(hi)
	}
	return axis{Lo: start, Hi: hi, Step: step}
}

// zeroAxis runs from zero to hi (to 1 when hi is not positive).
func zeroAxis(hi float64) axis {
	if !(hi > 0) || math.IsInf(hi, 0) {
		return axis{Lo: 0, Hi: 1, Step: 0.25}
	}
	step := niceStep(hi / axisTicks)
	if !(step > 0) || math.IsInf(step, 0) {
		step = hi
	}
	return axis{Lo: 0, Hi: hi, Step: step}
}

// niceStep is the smallest of 1, 2, 2.5 and 5 times a power of ten that is at least x.
func niceStep(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// Truncated is whether the axis starts above zero (the chart then must say so).
func (a axis) Truncated() bool { return a.Lo > 0 }

// frac is where v lies on the axis, in [0, 1].
func (a axis) frac(v float64) float64 {
	span := a.Hi - a.Lo
	if !(span > 0) || math.IsInf(span, 0) {
		return 0
	}
	f := (v - a.Lo) / span
	if !(f >= 0) {
		return 0
	}
	return min(f, 1)
}

// ticks are the values from Lo to Hi, one every Step (at most 12).
func (a axis) ticks() []float64 {
	if !(a.Step > 0) {
		return []float64{a.Lo, a.Hi}
	}
	var t []float64
	for i := 0; i <= 12; i++ {
		v := a.Lo + float64(i)*a.Step
		if v > a.Hi+a.Step*1e-9 {
			break
		}
		// a.Lo + i*Step in floating point: round to the step's precision for the label
		t = append(t, math.Round(v/a.Step)*a.Step)
	}
	return t
}

package jobdir

import (
	"fmt"
	"math"
	"strings"
)

// A node's telemetry files are numbers that node wrote (or a co-writer planted): each is
// range-checked where it is read. A value out of its range is left out (nil, or its sample
// counts cleared) and said, so that the rest of the job is collected and no sum of them can
// overflow: the bounds are far beyond any real GPU's, and a sum over a million nodes of
// eight GPUs each stays finite.
const (
	maxEnergyJ  = 1e13 // a 10 kW GPU for 30 years is 9.5e12 J
	maxPowerW   = 1e5  // a GPU's draw, average or peak
	maxMHz      = 1e6  // a clock
	minTempC    = -273.15
	maxTempC    = 1e4
	maxSeconds  = 1e9 // a row's time from the start, 31 years
	maxGPUIndex = 1 << 16
)

// inRange checks *v against [lo, hi] (finite); out of it, *v is cleared and a note returned.
func inRange(v **float64, name string, lo, hi float64) string {
	if *v == nil {
		return ""
	}
	x := **v
	if !math.IsNaN(x) && !math.IsInf(x, 0) && x >= lo && x <= hi {
		return ""
	}
	*v = nil
	return fmt.Sprintf("%s %v is out of range (%g to %g): left out", name, x, lo, hi)
}

// Sanitize clears what is out of range in the summary's figures and says what, per GPU
// ("gpu 0: energyJ -5 is out of range (0 to 1e+13): left out"); nil when all is in range.
func (s *TelemetrySummary) Sanitize() []string {
	var out []string
	for i := range s.GPUs {
		g := &s.GPUs[i]
		var bad []string
		for _, c := range []struct {
			v      **float64
			name   string
			lo, hi float64
		}{
			{&g.EnergyJ, "energyJ", 0, maxEnergyJ}, {&g.AvgPowerW, "avgPowerW", 0, maxPowerW}, {&g.PeakPowerW, "peakPowerW", 0, maxPowerW},
			{&g.AvgGFXMHz, "avgGfxMHz", 0, maxMHz}, {&g.MinGFXMHz, "minGfxMHz", 0, maxMHz}, {&g.AvgMemMHz, "avgMemMHz", 0, maxMHz},
			{&g.MaxTempC, "maxTempC", minTempC, maxTempC}, {&g.AvgUtilPct, "avgUtilPct", 0, 100},
		} {
			if m := inRange(c.v, c.name, c.lo, c.hi); m != "" {
				bad = append(bad, m)
			}
		}
		if g.Throttled < 0 || g.ThrottleKnown < 0 || g.Throttled > g.ThrottleKnown {
			bad = append(bad, fmt.Sprintf("throttled %d of %d samples is not a share of them: left out", g.Throttled, g.ThrottleKnown))
			g.Throttled, g.ThrottleKnown = 0, 0
		}
		if len(bad) > 0 {
			out = append(out, fmt.Sprintf("gpu %d: %s", i, strings.Join(bad, "; ")))
		}
	}
	return out
}

// check says what of the row is out of range ("" when nothing): such a row is left out of
// what a reader of the series sees.
func (r *TelemetryRow) check() string {
	switch {
	case math.IsNaN(r.T) || math.IsNaN(r.DT) || r.T < 0 || r.DT < 0 || r.T+r.DT > maxSeconds:
		return fmt.Sprintf("t %v and dt %v are not a time from the start (0 to %g s)", r.T, r.DT, float64(maxSeconds))
	case r.GPU < 0 || r.GPU >= maxGPUIndex:
		return fmt.Sprintf("gpu %d is not a GPU's index", r.GPU)
	case r.N < 0 || r.Throttled < 0 || r.Throttle < 0 || r.Throttled > r.Throttle || r.Unanswered < 0:
		return fmt.Sprintf("its sample counts (n %d, throttled %d of %d) are not counts", r.N, r.Throttled, r.Throttle)
	}
	for _, c := range []struct {
		v      **float64
		name   string
		lo, hi float64
	}{
		{&r.PowerW, "power_w", 0, maxPowerW}, {&r.MaxPowerW, "power_max_w", 0, maxPowerW}, {&r.EnergyJ, "energy_j", 0, maxEnergyJ},
		{&r.GFXMHz, "gfx_mhz", 0, maxMHz}, {&r.MinGFXMHz, "gfx_min_mhz", 0, maxMHz}, {&r.MemMHz, "mem_mhz", 0, maxMHz},
		{&r.TempC, "temp_c", minTempC, maxTempC}, {&r.MaxTempC, "temp_max_c", minTempC, maxTempC}, {&r.UtilPct, "util_pct", 0, 100},
	} {
		if m := inRange(c.v, c.name, c.lo, c.hi); m != "" {
			return m
		}
	}
	return ""
}

package jobdir

import (
	"math"
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }

// Every figure of a summary out of its range is cleared and named; the others stand.
func TestSanitizeClearsWhatNoGPUGives(t *testing.T) {
	s := &TelemetrySummary{GPUs: []TelemetryGPUStat{
		{EnergyJ: f64(1e308), AvgPowerW: f64(300), PeakPowerW: f64(math.Inf(1)), MaxTempC: f64(70), AvgUtilPct: f64(101), Throttled: 5, ThrottleKnown: 100},
		{EnergyJ: f64(-1), AvgPowerW: f64(math.NaN()), Throttled: 200, ThrottleKnown: 100},
		{EnergyJ: f64(5000), AvgPowerW: f64(250), PeakPowerW: f64(300), MaxTempC: f64(-300), Throttled: 1, ThrottleKnown: 10},
	}}
	bad := s.Sanitize()
	g := s.GPUs
	if g[0].EnergyJ != nil || g[0].PeakPowerW != nil || g[0].AvgUtilPct != nil || *g[0].AvgPowerW != 300 || *g[0].MaxTempC != 70 || g[0].Throttled != 5 ||
		g[1].EnergyJ != nil || g[1].AvgPowerW != nil || g[1].ThrottleKnown != 0 ||
		*g[2].EnergyJ != 5000 || g[2].MaxTempC != nil || g[2].Throttled != 1 {
		t.Errorf("%+v %+v %+v", g[0], g[1], g[2])
	}
	if len(bad) != 3 || !strings.HasPrefix(bad[0], "gpu 0: energyJ 1e+308 is out of range") || !strings.Contains(bad[1], "throttled 200 of 100 samples") {
		t.Errorf("%q", bad)
	}
}

// A series row out of range is left out; the reading says how many and the first.
func TestSeriesRowsOutOfRangeAreLeftOut(t *testing.T) {
	for _, c := range []struct {
		row  TelemetryRow
		want string
	}{
		{TelemetryRow{T: -1, DT: 1}, "not a time"},
		{TelemetryRow{T: math.NaN(), DT: 1}, "not a time"},
		{TelemetryRow{T: 1, DT: 1e300}, "not a time"},
		{TelemetryRow{T: 1, DT: 1, GPU: -2}, "not a GPU's index"},
		{TelemetryRow{T: 1, DT: 1, Throttled: 3, Throttle: 1}, "are not counts"},
		{TelemetryRow{T: 1, DT: 1, PowerW: f64(-3)}, "power_w -3 is out of range"},
		{TelemetryRow{T: 1, DT: 1, EnergyJ: f64(1e308)}, "energy_j 1e+308 is out of range"},
	} {
		if got := c.row.check(); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.row, got, c.want)
		}
	}
	if got := (&TelemetryRow{T: 1, DT: 1, PowerW: f64(300), GFXMHz: f64(1980), Throttled: 1, Throttle: 1}).check(); got != "" {
		t.Errorf("a good row: %q", got)
	}
}

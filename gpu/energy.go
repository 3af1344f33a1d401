package gpu

import (
	"fmt"
	"math"
)

// MaxPowerW is more than any GPU draws: an energy counter that rose faster than this over
// an interval jumped (a reset to another origin), and that interval's energy is not the
// counter's rise.
const MaxPowerW = 20000

// Energy is one GPU's energy over its samples, by the one rule benchctl has (a run's
// telemetry and `gpus --watch` both integrate with it): over each interval between two
// samples, the device's energy counter's rise where both samples have the counter and it
// rose plausibly (not backwards: a wrap or a reset; not faster than MaxPowerW); else the
// power of both ends integrated over the interval (a trapezoid); else nothing. The first
// sample starts it. The zero Energy is ready; it is not safe for concurrent use.
type Energy struct {
	// J is the energy so far, joules.
	J float64
	// FromCounter and FromPower say which way any interval's energy came.
	FromCounter, FromPower bool

	lastCounter, lastPower *float64
	lastT                  float64
	seen                   bool
}

// Add takes the GPU's reading at t seconds (any origin, increasing). A reading that failed
// (r.Err) ends the interval: the next sample starts afresh. jumped, when not "", says why an
// interval's counter was not believed (its energy then came from power).
func (e *Energy) Add(t float64, r Reading) (jumped string) {
	if r.Err != nil {
		e.Break()
		return ""
	}
	defer func() {
		// Copies: a sampler may reuse its readings' storage.
		e.lastCounter, e.lastPower, e.lastT, e.seen = copyFloat(r.EnergyJ), copyFloat(r.PowerW), t, true
	}()
	if !e.seen {
		return ""
	}
	dt := t - e.lastT
	if dt <= 0 || math.IsNaN(dt) {
		return ""
	}
	if r.EnergyJ != nil && e.lastCounter != nil {
		d := *r.EnergyJ - *e.lastCounter
		if d >= 0 && d <= MaxPowerW*dt && !math.IsNaN(d) {
			e.J += d
			e.FromCounter = true
			return ""
		}
		jumped = fmt.Sprintf("the energy counter went from %.0f J to %.0f J in %.1f s (wrapped or reset): energy over such intervals is integrated from power", *e.lastCounter, *r.EnergyJ, dt)
	}
	if r.PowerW != nil && e.lastPower != nil && !math.IsNaN(*r.PowerW) && !math.IsNaN(*e.lastPower) {
		e.J += (*r.PowerW + *e.lastPower) / 2 * dt
		e.FromPower = true
	}
	return jumped
}

// Break ends the current interval (a silence, a failed reading): the energy over it is not
// known, and the next sample starts afresh.
func (e *Energy) Break() { e.lastCounter, e.lastPower, e.seen = nil, nil, false }

// Started reports whether a sample has been taken since the last Break (or ever).
func (e *Energy) Started() bool { return e.seen }

// Measured reports whether the last sample had the device's counter.
func (e *Energy) Measured() bool { return e.lastCounter != nil }

func copyFloat(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

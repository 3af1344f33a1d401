package gpu

import (
	"context"
	"strings"
)

// Reading is what one GPU was doing at one moment, as the telemetry source read it. A nil
// field is a fact the source did not give this time (unsupported, or failed: the Sampler's
// Unavailable says which and why, once).
type Reading struct {
	Index int // the GPU's Index in the inventory

	PowerW          *float64 // board power now (NVML: power usage; AMD: socket/current power), watts
	EnergyJ         *float64 // the device's energy counter in joules since its own origin; nil without a counter
	GFXClockMHz     *uint32  // graphics / SM clock now
	MemClockMHz     *uint32  // memory clock now
	TemperatureC    *float64 // GPU (NVIDIA) / hotspot, else edge (AMD)
	UtilPercent     *float64 // graphics / compute busy, 0-100
	MemoryUsedBytes *uint64  // device memory in use

	// Throttle is the set of clock-limiting reasons active now (NVML's clock event reasons,
	// AMD SMI's throttle status, hwmon has none); ThrottleKnown says the source gave it.
	Throttle      Throttle
	ThrottleKnown bool

	// Err is set when the GPU did not answer at all this time (it fell off the bus, the
	// driver went away): every other field is then nil.
	Err error
}

// Throttle is a set of reasons a GPU's clocks were held below what was asked.
type Throttle uint8

// Throttle reasons, grouped as collect judges them: power, thermal and reliability limits
// make a result suspect; Other (application clocks, sync boost, display) is recorded only.
const (
	ThrottlePower       Throttle = 1 << iota // software power cap, hardware power brake, PPT
	ThrottleThermal                          // software or hardware thermal slowdown, hotspot, VR / HBM temperature
	ThrottleReliability                      // hardware slowdown, PROCHOT, VR fault and other protective limits
	ThrottleOther                            // application clocks, sync boost, display clock and the like
)

// Limiting reports whether t holds a reason collect counts as throttling (power, thermal or
// reliability).
func (t Throttle) Limiting() bool { return t&(ThrottlePower|ThrottleThermal|ThrottleReliability) != 0 }

// String is the reasons as words joined by "+" ("power+thermal"), "" for none.
func (t Throttle) String() string {
	var w []string
	for _, r := range []struct {
		bit  Throttle
		name string
	}{{ThrottlePower, "power"}, {ThrottleThermal, "thermal"}, {ThrottleReliability, "reliability"}, {ThrottleOther, "other"}} {
		if t&r.bit != 0 {
			w = append(w, r.name)
		}
	}
	return strings.Join(w, "+")
}

// Unavailable is a fact a Sampler cannot read, and why: said once per GPU and field, not
// once per sample.
type Unavailable struct {
	GPU   int    `json:"gpu"`   // the GPU's Index; -1 for every GPU
	Field string `json:"field"` // power, energy, gfxClock, memClock, temperature, util, memoryUsed, throttle, gpu (the whole GPU), or source (GPU -1: why a preferred source was not used)
	Why   string `json:"why"`
}

// Sampler reads the selected GPUs' telemetry again and again. It is used from one
// goroutine; Sample never blocks longer than its context allows and never panics on a
// source that misbehaves (a GPU that stops answering is a Reading with Err).
type Sampler interface {
	// Sample reads every GPU the sampler was opened for, in the order given to OpenSampler.
	Sample(ctx context.Context) []Reading
	// Source names what answers: nvml, amdsmi or sysfs (hwmon).
	Source() string
	// Unavailable lists the facts that could not be read so far, each once. The caller
	// takes the new ones after each Sample (the list only grows).
	Unavailable() []Unavailable
	// Close releases the library session. Idempotent.
	Close() error
}

// Package gputest holds samples for the tests of gpu's users: one script of readings that
// every integrator of energy is checked against, so that a run's telemetry and
// `gpus --watch` are held to the same figure for the same samples.
package gputest

import (
	"errors"

	"github.com/benchctl/benchctl/gpu"
)

// EnergyScript is GPU 0's readings one second apart, through every case of gpu.Energy's
// rule, and the joules they make (EnergyScriptJ):
//
//	0 s  100 W, no counter         starts
//	1 s  120 W                     +110 J from power
//	2 s  120 W, counter 50 J       +120 J from power (the counter appears)
//	3 s  120 W, counter 10 J       +120 J from power (the counter went backwards)
//	4 s  120 W, counter 15 J       +5 J from the counter
//	5 s  130 W, counter 1e9 J      +125 J from power (the counter rose faster than any GPU draws)
//	6 s  no answer                 the interval breaks: nothing known over it
//	7 s  200 W, counter 1e9+500 J  starts again
//	8 s  200 W, counter 1e9+700 J  +200 J from the counter
func EnergyScript() [][]gpu.Reading {
	f := func(v float64) *float64 { return &v }
	return [][]gpu.Reading{
		{{Index: 0, PowerW: f(100)}},
		{{Index: 0, PowerW: f(120)}},
		{{Index: 0, PowerW: f(120), EnergyJ: f(50)}},
		{{Index: 0, PowerW: f(120), EnergyJ: f(10)}},
		{{Index: 0, PowerW: f(120), EnergyJ: f(15)}},
		{{Index: 0, PowerW: f(130), EnergyJ: f(1e9)}},
		{{Index: 0, Err: errors.New("the GPU did not answer")}},
		{{Index: 0, PowerW: f(200), EnergyJ: f(1e9 + 500)}},
		{{Index: 0, PowerW: f(200), EnergyJ: f(1e9 + 700)}},
	}
}

// EnergyScriptJ is what EnergyScript makes: 110+120+120+5+125+200.
const EnergyScriptJ = 680.0

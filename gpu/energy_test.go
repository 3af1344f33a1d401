package gpu_test

import (
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/gpu/gputest"
)

// The rule, on the script every integrator is held to.
func TestEnergyRule(t *testing.T) {
	var e gpu.Energy
	jumps := 0
	for i, rs := range gputest.EnergyScript() {
		if why := e.Add(float64(i), rs[0]); why != "" {
			jumps++
		}
	}
	if e.J != gputest.EnergyScriptJ || !e.FromCounter || !e.FromPower || jumps != 2 {
		t.Errorf("%v J (counter %v, power %v), %d jumps; want %v J from both, 2 jumps", e.J, e.FromCounter, e.FromPower, jumps, gputest.EnergyScriptJ)
	}
}

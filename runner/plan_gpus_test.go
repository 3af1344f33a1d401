package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// A dry run without this node's GPUs plans with the GPUs asked for; a model's n_gpus that
// no node has (2e9) is refused, not allocated; gpu.vendor auto plans without device options.
func TestPlannedGPUs(t *testing.T) {
	why := &GPUError{Msg: "gpu.vendor amd: no AMD GPUs found on this node: no KFD"}
	model := func(n string) []manifest.Benchmark {
		return []manifest.Benchmark{{Name: "m", Model: &manifest.Model{NGPUs: n}}}
	}
	acc, _, _, err := plannedGPUs(manifest.GPU{Vendor: "amd"}, model("2000000000"), why)
	if err == nil || !strings.Contains(err.Error(), "n_gpus 2000000000") || len(acc.GPUs) != 0 {
		t.Errorf("2e9 GPUs: %v %d", err, len(acc.GPUs))
	}
	var gerr *GPUError
	if !errors.As(err, &gerr) {
		t.Errorf("not a GPUError (exit 4): %T", err)
	}
	acc, lines, warn, err := plannedGPUs(manifest.GPU{Vendor: "auto", Count: 4}, nil, why)
	if err != nil || len(acc.GPUs) != 4 || acc.Env != nil || acc.Devices != nil || lines[0] != "4 GPUs, as gpu.count asks (not this node's: the node that runs the job selects them)" ||
		!strings.Contains(warn, why.Msg) || strings.Contains(warn, "\n") {
		t.Errorf("auto: %v %+v %q %q", err, acc, lines, warn)
	}
	acc, lines, _, err = plannedGPUs(manifest.GPU{Vendor: "nvidia"}, nil, why)
	if err != nil || len(acc.GPUs) != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "all of the node's NVIDIA GPUs") {
		t.Errorf("all: %v %q", err, lines)
	}
}

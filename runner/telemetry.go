package runner

import (
	"context"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/runner/telemetry"
)

// OpenSampler opens the telemetry of the GPUs inv lists (gpu.OpenSampler with the node's
// GPU options); tests give their own.
type OpenSampler = telemetry.OpenSampler

// sampleDuring samples run's GPUs while its container runs (telemetry.Node.SampleDuring,
// into this node's folder), until the returned stop is called.
func (r *nodeRun) sampleDuring(ctx context.Context, run string, gpus GPUAccess) (stop func()) {
	return r.tel.SampleDuring(ctx, r.nf, r.log, run, gpus.GPUs)
}

// telemetry is the node's sampling of sel, as the manifest asks.
func (r *nodeRun) telemetry(sel GPUAccess) *telemetry.Node {
	open := r.o.OpenSampler
	if open == nil {
		opts := gpu.Options{SysfsRoot: r.o.SysfsRoot}
		open = func(ctx context.Context, inv gpu.Inventory) (gpu.Sampler, error) {
			return gpu.OpenSampler(ctx, opts, inv)
		}
	}
	return telemetry.New(r.o.Manifest.Telemetry.Every(), open, sel.Vendor, sel.GPUs)
}

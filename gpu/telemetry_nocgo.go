//go:build !cgo

package gpu

import "context"

// openNVMLSampler needs NVML, which needs cgo. nvidia-smi is not sampled instead: a
// process per sample costs tens of milliseconds of CPU, too much at 100 ms.
func openNVMLSampler(context.Context, Options, Inventory) (Sampler, error) {
	return nil, &NotFoundError{Vendor: VendorNVIDIA, Reason: "GPU telemetry needs NVML, which needs a cgo build, and this benchctl was built with CGO_ENABLED=0"}
}

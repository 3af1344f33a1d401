//go:build !cgo

package gpu

import "context"

// Build says what this build reads GPUs with: a CGO_ENABLED=0 build has no NVML (it needs
// cgo) and does not load AMD SMI.
const Build = "CGO_ENABLED=0: NVIDIA GPUs through nvidia-smi (no NVML: no NVIDIA telemetry), AMD GPUs through sysfs"

// detectNVIDIA without cgo cannot load NVML, so it asks nvidia-smi.
func detectNVIDIA(ctx context.Context, opts Options) (Inventory, error) {
	return fromNvidiaSMI(ctx, opts)
}

// snapshotNVIDIA needs NVML, which needs cgo.
func snapshotNVIDIA(context.Context, Options) (Inventory, error) {
	return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "NVML needs cgo, and this benchctl was built with CGO_ENABLED=0"}
}

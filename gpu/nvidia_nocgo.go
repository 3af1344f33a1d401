//go:build !cgo

package gpu

import "context"

// detectNVIDIA without cgo cannot load NVML, so it asks nvidia-smi.
func detectNVIDIA(ctx context.Context, opts Options) (Inventory, error) {
	return fromNvidiaSMI(ctx, opts)
}

// snapshotNVIDIA needs NVML, which needs cgo.
func snapshotNVIDIA(context.Context, Options) (Inventory, error) {
	return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "NVML needs cgo, and this benchctl was built with CGO_ENABLED=0"}
}

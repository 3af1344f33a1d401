//go:build !cgo

package gpu

import "context"

// detectNVIDIA without cgo cannot load NVML, so it asks nvidia-smi.
func detectNVIDIA(ctx context.Context, opts Options) (Inventory, error) {
	return fromNvidiaSMI(ctx, opts)
}

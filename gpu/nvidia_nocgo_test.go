//go:build !cgo

package gpu

import (
	"context"
	"os/exec"
	"testing"
)

// noNVIDIA makes the NVIDIA probe report "not found" in this build (no nvidia-smi).
func noNVIDIA(opts *Options) {
	opts.run = func(context.Context, string, ...string) ([]byte, error) { return nil, exec.ErrNotFound }
}

// someNVIDIA makes the NVIDIA probe find a DGX H100 through nvidia-smi in this build.
func someNVIDIA(_ *testing.T, opts *Options) {
	opts.run = func(context.Context, string, ...string) ([]byte, error) { return []byte(dgxH100SMI), nil }
}

func TestNoCgoUsesNvidiaSMI(t *testing.T) {
	opts := Options{Vendor: VendorNVIDIA, SysfsRoot: t.TempDir()}
	someNVIDIA(t, &opts)
	inv, err := Detect(context.Background(), opts)
	if err != nil || inv.Source != SourceNvidiaSMI || len(inv.GPUs) != 8 {
		t.Fatalf("%+v %v", inv, err)
	}
}

//go:build !cgo

package gpu

import (
	"context"
	"errors"
	"os/exec"
	"strings"
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

// Without cgo there is no NVML, so no NVIDIA telemetry: "not found", saying why.
func TestNoCgoTelemetry(t *testing.T) {
	inv := Inventory{Vendor: VendorNVIDIA, GPUs: []GPU{{Index: 0}}}
	_, err := OpenSampler(context.Background(), Options{}, inv)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "needs a cgo build") {
		t.Fatalf("%v", err)
	}
}

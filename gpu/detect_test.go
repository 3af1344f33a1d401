package gpu

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetectAuto(t *testing.T) {
	ctx := context.Background()

	opts := Options{SysfsRoot: t.TempDir()}
	noNVIDIA(&opts)
	inv, err := Detect(ctx, opts)
	if err != nil || inv.Vendor != VendorNone || inv.GPUs == nil || len(inv.GPUs) != 0 {
		t.Fatalf("nothing here: %+v %v, want vendor none with an empty GPU list", inv, err)
	}

	opts = Options{Vendor: VendorAuto, SysfsRoot: filepath.Join(fixtures, "mi300x")}
	someNVIDIA(t, &opts)
	if inv, err = Detect(ctx, opts); err != nil || inv.Vendor != VendorAMD {
		t.Fatalf("AMD and NVIDIA: %q %v, want AMD first", inv.Vendor, err)
	}

	opts = Options{SysfsRoot: t.TempDir()}
	someNVIDIA(t, &opts)
	if inv, err = Detect(ctx, opts); err != nil || inv.Vendor != VendorNVIDIA || len(inv.GPUs) != 8 {
		t.Fatalf("NVIDIA only: %q %v", inv.Vendor, err)
	}
}

func TestDetectAskedVendorMissing(t *testing.T) {
	opts := Options{Vendor: VendorNVIDIA, SysfsRoot: filepath.Join(fixtures, "mi300x")}
	noNVIDIA(&opts)
	_, err := Detect(context.Background(), opts)
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Vendor != VendorNVIDIA || !strings.HasPrefix(err.Error(), "no NVIDIA GPUs found on this node: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestDetectBadOptions(t *testing.T) {
	for _, opts := range []Options{{Vendor: "intel"}, {Vendor: VendorAMD, AMDSource: "rocm-smi"}} {
		if _, err := Detect(context.Background(), opts); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("%+v: err = %v", opts, err)
		}
	}
}

func TestExecRun(t *testing.T) {
	if _, err := execRun(context.Background(), "benchctl-no-such-program"); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing program: %v, want exec.ErrNotFound", err)
	}
	out, err := execRun(context.Background(), "echo", "a;b", "$HOME") // arguments, not a shell line
	if err != nil || string(out) != "a;b $HOME\n" {
		t.Errorf("echo: %q %v", out, err)
	}
}

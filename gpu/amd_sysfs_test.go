package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const fixtures = "../tests/fixtures/sysfs"

func TestKFDMI300X(t *testing.T) {
	inv, err := Detect(context.Background(), Options{Vendor: VendorAMD, SysfsRoot: filepath.Join(fixtures, "mi300x")})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Vendor != VendorAMD || inv.Source != SourceSysfs || len(inv.GPUs) != 8 {
		t.Fatalf("got vendor %q source %q with %d GPUs, want amd/sysfs with 8 (the 2 CPU nodes skipped)", inv.Vendor, inv.Source, len(inv.GPUs))
	}
	buses := []string{"0c", "22", "38", "5c", "9f", "af", "bf", "df"}
	minors := []int{128, 129, 130, 131, 132, 133, 135, 134} // GPUs 6 and 7 swapped in the tree
	for i, g := range inv.GPUs {
		want := GPU{
			Index:       i,
			UUID:        fmt.Sprintf("GPU-%016x", 0x3b8a1d6f2c9e4500+i*0x1111),
			Name:        "AMD Instinct MI300X",
			MemoryBytes: 192 << 30,
			PCIBusID:    "0000:" + buses[i] + ":00.0",
			Arch:        "gfx942",
			RenderNode:  fmt.Sprintf("/dev/dri/renderD%d", minors[i]),
			Devices:     []string{"/dev/kfd", fmt.Sprintf("/dev/dri/renderD%d", minors[i])},
			NUMANode:    -1,
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("GPU %d:\n got %+v\nwant %+v", i, g, want)
		}
	}
	if inv.Driver != "" || inv.Runtime != "" {
		t.Errorf("the fixture has no driver or ROCm version, got %q %q", inv.Driver, inv.Runtime)
	}
}

func TestKFDMI250XHasOneGPUPerGCD(t *testing.T) {
	inv, err := Detect(context.Background(), Options{Vendor: VendorAMD, SysfsRoot: filepath.Join(fixtures, "mi250x")})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.GPUs) != 8 {
		t.Fatalf("got %d GPUs, want 8 GCDs (4 CPU nodes skipped)", len(inv.GPUs))
	}
	// KFD nodes 4..11: node 10 and 11 must come after 9 (numeric, not name order).
	buses := []string{"c1", "c6", "c9", "ce", "d1", "d6", "d9", "de"}
	for i, g := range inv.GPUs {
		if g.Index != i || g.Arch != "gfx90a" || g.MemoryBytes != 64<<30 || g.Name != "AMD Instinct MI250X/MI250" ||
			g.PCIBusID != "0000:"+buses[i]+":00.0" || g.RenderNode != fmt.Sprintf("/dev/dri/renderD%d", 128+i) {
			t.Errorf("GCD %d: %+v", i, g)
		}
	}
}

// writeTree writes files (path -> content) under a temporary root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const kfdNodes = "sys/class/kfd/kfd/topology/nodes/"

func TestKFDDriverRuntimeNUMAAndOlderKernels(t *testing.T) {
	root := writeTree(t, map[string]string{
		kfdNodes + "0/properties": "cpu_cores_count 64\nsimd_count 0\n",
		// An older kernel: local_mem_size filled in, no mem_banks, no unique_id, a key this reader does not know.
		kfdNodes + "1/properties": "simd_count 480\ngfx_target_version 90008\nvendor_id 4098\ndevice_id 29580\n" +
			"location_id 17152\ndomain 1\ndrm_render_minor 129\nlocal_mem_size 34342961152\nfuture_key 12 34\n",
		"sys/bus/pci/devices/0001:43:00.0/numa_node": "1\n",
		"sys/module/amdgpu/version":                  "6.8.5\n",
		"opt/rocm/.info/version":                     "6.2.0-66\n",
	})
	inv, err := Detect(context.Background(), Options{Vendor: VendorAMD, SysfsRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	want := Inventory{Vendor: VendorAMD, Driver: "6.8.5", Runtime: "6.2.0", Source: SourceSysfs, GPUs: []GPU{{
		Index: 0, Name: "AMD Instinct MI100", MemoryBytes: 34342961152, PCIBusID: "0001:43:00.0", Arch: "gfx908",
		RenderNode: "/dev/dri/renderD129", Devices: []string{"/dev/kfd", "/dev/dri/renderD129"}, NUMANode: 1,
	}}}
	if !reflect.DeepEqual(inv, want) {
		t.Fatalf("\n got %+v\nwant %+v", inv, want)
	}
}

func TestKFDNotFound(t *testing.T) {
	cpuOnly := writeTree(t, map[string]string{kfdNodes + "0/properties": "cpu_cores_count 64\nsimd_count 0\n"})
	for name, root := range map[string]string{"no kfd": t.TempDir(), "cpu nodes only": cpuOnly} {
		_, err := Detect(context.Background(), Options{Vendor: VendorAMD, SysfsRoot: root})
		var nf *NotFoundError
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &nf) || nf.Vendor != VendorAMD || !nf.InvalidInput() {
			t.Errorf("%s: err = %v, want a NotFoundError for amd", name, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "no AMD GPUs found on this node: ") {
			t.Errorf("%s: message %q", name, err)
		}
	}
}

func TestKFDUnreadableNodeIsAnError(t *testing.T) {
	root := writeTree(t, map[string]string{kfdNodes + "0/properties": "simd_count 0\n"})
	if err := os.MkdirAll(filepath.Join(root, kfdNodes, "1"), 0o755); err != nil { // a node without properties
		t.Fatal(err)
	}
	_, err := Detect(context.Background(), Options{Vendor: VendorAMD, SysfsRoot: root})
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "KFD node 1") {
		t.Fatalf("err = %v, want a KFD node 1 error that is not 'not found'", err)
	}
}

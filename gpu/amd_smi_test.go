package gpu

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// amd-smi output in the shape of ROCm 6.2 (a bare list), shortened to two MI300X.
const (
	amdSMIList62 = `[
    {"gpu": 0, "bdf": "0000:0c:00.0", "uuid": "3bff74a1-0000-1000-8045-2c9e4500aabb", "kfd_id": 17402, "node_id": 2, "partition_id": 0},
    {"gpu": 1, "bdf": "0000:22:00.0", "uuid": "51ff74a1-0000-1000-8056-2c9e5611aabb", "kfd_id": 53252, "node_id": 3, "partition_id": 0}
]`
	amdSMIStatic62 = `[
    {"gpu": 0,
     "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00",
              "asic_serial": "0x3B8A1D6F2C9E4500", "oam_id": 0, "num_compute_units": 304, "target_graphics_version": "gfx942"},
     "bus": {"bdf": "0000:0c:00.0", "max_pcie_width": 16, "max_pcie_speed": {"value": 32, "unit": "GT/s"}, "pcie_interface_version": "Gen 5", "slot_type": "OAM"},
     "driver": {"name": "amdgpu", "version": "6.8.5"},
     "vram": {"type": "HBM3", "vendor": "N/A", "size": {"value": 196592, "unit": "MB"}, "bit_width": 8192},
     "numa": {"node": 0, "affinity": 0}},
    {"gpu": 1,
     "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00",
              "asic_serial": "0x3B8A1D6F2C9E5611", "oam_id": 1, "num_compute_units": 304, "target_graphics_version": "gfx942"},
     "bus": {"bdf": "0000:22:00.0"},
     "driver": {"name": "amdgpu", "version": "6.8.5"},
     "vram": {"type": "HBM3", "vendor": "N/A", "size": {"value": 196592, "unit": "MB"}, "bit_width": 8192},
     "numa": {"node": 1, "affinity": 1}}
]`
)

func TestAMDSMI(t *testing.T) {
	root := writeTree(t, map[string]string{
		"sys/bus/pci/devices/0000:0c:00.0/drm/card1":      "",
		"sys/bus/pci/devices/0000:0c:00.0/drm/renderD128": "",
		"opt/rocm/.info/version":                          "6.2.0-66\n",
	})
	var calls [][]string
	run := func(_ context.Context, name string, args ...string) ([]byte, error) {
		calls = append(calls, append([]string{name}, args...))
		if args[0] == "list" {
			return []byte(amdSMIList62), nil
		}
		return []byte(amdSMIStatic62), nil
	}
	inv, err := Detect(context.Background(), Options{Vendor: VendorAMD, AMDSource: SourceAMDSMICLI, SysfsRoot: root, run: run})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"amd-smi", "list", "--json"}, {"amd-smi", "static", "--json"}}; !reflect.DeepEqual(calls, want) {
		t.Errorf("ran %q, want %q", calls, want)
	}
	want := Inventory{Vendor: VendorAMD, Driver: "6.8.5", Runtime: "6.2.0", Source: SourceAMDSMICLI, GPUs: []GPU{
		{Index: 0, UUID: "GPU-3b8a1d6f2c9e4500", Name: "AMD Instinct MI300X", MemoryBytes: 196592 << 20, PCIBusID: "0000:0c:00.0",
			Arch: "gfx942", RenderNode: "/dev/dri/renderD128", Devices: []string{"/dev/kfd", "/dev/dri/renderD128"}, NUMANode: 0},
		{Index: 1, UUID: "GPU-3b8a1d6f2c9e5611", Name: "AMD Instinct MI300X", MemoryBytes: 196592 << 20, PCIBusID: "0000:22:00.0",
			Arch: "gfx942", Devices: []string{"/dev/kfd"}, NUMANode: 1},
	}}
	if !reflect.DeepEqual(inv, want) {
		t.Fatalf("\n got %+v\nwant %+v", inv, want)
	}
}

func TestAMDSMIShapes(t *testing.T) {
	// ROCm 6.4+: {"gpu_data": [...]}, after a group warning amd-smi prints to stdout; a CPU entry is skipped.
	newer := "[WARNING] User is missing the following required groups: render\n{\"gpu_data\": [{\"gpu\": 0, \"bdf\": \"0000:0c:00.0\"}], \"cpu_data\": []}"
	newerStatic := `{"gpu_data": [{"gpu": 0, "asic": {"market_name": "N/A", "device_id": "0x74a5", "asic_serial": "N/A", "target_graphics_version": "gfx942"},
	  "vram": {"size": "262128 MB"}, "driver": {"name": "amdgpu", "version": "N/A"}}], "cpu_data": [{"cpu": 0}]}`
	inv, err := parseAMDSMI(Options{SysfsRoot: t.TempDir()}, []byte(newer), []byte(newerStatic))
	if err != nil {
		t.Fatal(err)
	}
	g := inv.GPUs[0]
	if g.Name != "AMD Instinct MI325X" || g.MemoryBytes != 262128<<20 || g.UUID != "" || inv.Driver != "" || g.NUMANode != -1 {
		t.Fatalf("%+v %+v", inv, g)
	}
	// ROCm 6.0: vram_size_mb and driver_version.
	older := `[{"gpu": 0, "asic": {"market_name": "AMD Instinct MI250X/MI250", "target_graphics_version": "gfx90a", "asic_serial": "0x5E4F8A2B71C03900"},
	  "vram": {"vram_type": "HBM", "vram_size_mb": 65520}, "driver": {"driver_name": "amdgpu", "driver_version": "6.3.6"}}]`
	inv, err = parseAMDSMI(Options{SysfsRoot: t.TempDir()}, []byte(`[{"gpu": 0, "bdf": "0000:c1:00.0", "uuid": "x"}]`), []byte(older))
	if err != nil {
		t.Fatal(err)
	}
	if g := inv.GPUs[0]; g.MemoryBytes != 65520<<20 || inv.Driver != "6.3.6" || g.UUID != "GPU-5e4f8a2b71c03900" || g.PCIBusID != "0000:c1:00.0" {
		t.Fatalf("%+v %+v", inv, g)
	}
}

func TestAMDSMIFailures(t *testing.T) {
	cases := []struct {
		name      string
		list, out string
		err       error
		notFound  bool
		want      string
	}{
		{"not installed", "", "", exec.ErrNotFound, true, "amd-smi is not on PATH"},
		{"no GPUs", "[]", "[]", nil, true, "amd-smi lists no GPUs"},
		{"not JSON", "amd-smi failed", "", nil, false, "amd-smi list --json: no JSON in the output"},
		{"wrong JSON", `{"gpus": 3}`, "[]", nil, false, `want a list of GPUs or {"gpu_data": [...]}`},
	}
	for _, c := range cases {
		run := func(_ context.Context, _ string, args ...string) ([]byte, error) {
			if args[0] == "list" {
				return []byte(c.list), c.err
			}
			return []byte(c.out), nil
		}
		_, err := Detect(context.Background(), Options{Vendor: VendorAMD, AMDSource: SourceAMDSMICLI, run: run})
		if err == nil || errors.Is(err, ErrNotFound) != c.notFound || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want notFound=%v containing %q", c.name, err, c.notFound, c.want)
		}
	}
}

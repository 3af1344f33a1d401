//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// dgxH100Buses are the PCI buses of the eight H100s of a DGX H100.
var dgxH100Buses = []string{"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"}

// dgxH100 is go-nvml's DGX H100 mock with the PCI bus ids a real NVML reports: the mock
// answers GetPciInfo with an empty BusId, so each device gets one in NVML's own format.
func dgxH100(t testing.TB) *server.Server {
	t.Helper()
	s := dgxh100.New()
	if s == nil {
		t.Fatal("dgxh100.New returned nil")
	}
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		busID := "00000000:" + dgxH100Buses[i] + ":00.0"
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			p := nvml.PciInfo{PciDeviceId: dev.Config.PciDeviceId}
			for j := 0; j < len(busID); j++ {
				p.BusId[j] = int8(busID[j])
			}
			return p, nvml.SUCCESS
		}
	}
	return s
}

// withNVML makes Detect's NVIDIA probe read lib.
func withNVML(lib nvmlLibrary) Options {
	return Options{Vendor: VendorNVIDIA, SysfsRoot: "/nonexistent", nvidia: nvmlProbe(lib)}
}

func nvmlProbe(lib nvmlLibrary) func(context.Context, Options) (Inventory, error) {
	return func(_ context.Context, opts Options) (Inventory, error) { return fromNVML(opts, lib, false) }
}

func TestNVMLDGXH100(t *testing.T) {
	s := dgxH100(t)
	inv, err := Detect(context.Background(), withNVML(s))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Vendor != VendorNVIDIA || inv.Source != SourceNVML || inv.Driver != "550.54.15" || inv.Runtime != "12.4" {
		t.Fatalf("inventory header %+v", inv)
	}
	if len(inv.GPUs) != 8 {
		t.Fatalf("got %d GPUs, want 8", len(inv.GPUs))
	}
	for i, g := range inv.GPUs {
		dev := s.Devices[i].(*server.Device)
		if g.Index != i || g.UUID != dev.UUID || !strings.HasPrefix(g.UUID, "GPU-") || g.Name != "NVIDIA H100 80GB HBM3" ||
			g.MemoryBytes != 80<<30 || g.Arch != "sm_90" || g.RenderNode != "" || g.NUMANode != -1 ||
			g.PCIBusID != "0000:"+strings.ToLower(dgxH100Buses[i])+":00.0" {
			t.Errorf("GPU %d: %+v", i, g)
		}
		wantDevs := fmt.Sprintf("[/dev/nvidia%d /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools]", i)
		if fmt.Sprint(g.Devices) != wantDevs {
			t.Errorf("GPU %d devices %v, want %s", i, g.Devices, wantDevs)
		}
	}
	// The inventory's UUIDs are what CUDA_VISIBLE_DEVICES takes.
	sel, err := Select(inv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": inv.GPUs[6].UUID + ",2"})
	if err != nil || len(sel) != 2 || sel[0].Index != 6 || sel[1].Index != 2 {
		t.Fatalf("Select by UUID: %v %v", indices(sel), err)
	}
}

func TestNVMLOptionalAnswers(t *testing.T) {
	s := dgxh100.New() // unpatched: empty PCI bus id
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		dev.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
		dev.GetMinorNumberFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	}
	s.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	inv, err := Detect(context.Background(), withNVML(s))
	if err != nil {
		t.Fatal(err)
	}
	g := inv.GPUs[0]
	if inv.Runtime != "" || g.PCIBusID != "" || g.Arch != "" || fmt.Sprint(g.Devices) != "[/dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools]" {
		t.Fatalf("got %+v / %+v", inv, g)
	}
}

func TestNVMLFailures(t *testing.T) {
	initReturns := func(r nvml.Return) nvmlLibrary {
		s := dgxh100.New()
		s.InitFunc = func() nvml.Return { return r }
		return s
	}
	noDevices := dgxh100.New()
	noDevices.Devices = nil
	badUUID := dgxH100(t)
	badUUID.Devices[3].(*server.Device).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }

	cases := []struct {
		name     string
		lib      nvmlLibrary
		notFound bool
		want     string
	}{
		// The real go-nvml library, pointed at a library that does not exist: dlopen fails.
		{"no libnvidia-ml", nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")), true, "libnvidia-ml.so.1 could not be loaded"},
		{"mock: library not found", initReturns(nvml.ERROR_LIBRARY_NOT_FOUND), true, "no NVIDIA driver installed"},
		{"driver not loaded", initReturns(nvml.ERROR_DRIVER_NOT_LOADED), true, "kernel driver is not loaded"},
		{"no permission", initReturns(nvml.ERROR_NO_PERMISSION), false, "NVML: initialising NVML: ERROR_NO_PERMISSION"},
		{"zero devices", noDevices, true, "NVML reports 0 devices"},
		{"lost GPU", badUUID, false, "NVML: GPU 3: UUID: ERROR_GPU_IS_LOST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Detect(context.Background(), withNVML(c.lib))
			if err == nil || errors.Is(err, ErrNotFound) != c.notFound || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want notFound=%v containing %q", err, c.notFound, c.want)
			}
		})
	}
}

// noNVIDIA makes the NVIDIA probe report "not found" in this build.
func noNVIDIA(opts *Options) {
	opts.nvidia = nvmlProbe(nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")))
}

// someNVIDIA makes the NVIDIA probe find the DGX H100 mock in this build.
func someNVIDIA(t *testing.T, opts *Options) {
	opts.nvidia = nvmlProbe(dgxH100(t))
}

// The real NVML path on whatever machine runs the tests: without a driver it must be "not
// found" (not a crash); with one it must list GPUs.
func TestRealNVML(t *testing.T) {
	inv, err := Detect(context.Background(), Options{Vendor: VendorNVIDIA})
	switch {
	case errors.Is(err, ErrNotFound):
		t.Logf("no NVIDIA GPUs here: %v", err)
	case err != nil:
		t.Fatalf("NVML failed: %v", err)
	case len(inv.GPUs) == 0 || inv.Source != SourceNVML:
		t.Fatalf("NVML found nothing but said so without an error: %+v", inv)
	default:
		t.Logf("found %d NVIDIA GPUs: %+v", len(inv.GPUs), inv)
	}
}

// A snapshot reads each GPU's state through NVML: memory in use, temperature, power
// draw and limit, clocks and the compute processes, named from /proc.
func TestNVMLSnapshot(t *testing.T) {
	s := dgxH100(t)
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.MemoryInfo.Used = uint64(i) << 30
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(30 + i), nvml.SUCCESS }
		dev.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100500 + 1000*i), nvml.SUCCESS }
		dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			switch i {
			case 3:
				return []nvml.ProcessInfo{{Pid: uint32(os.Getpid()), UsedGpuMemory: 1 << 30}}, nvml.SUCCESS
			case 5:
				return nil, nvml.ERROR_NO_PERMISSION
			}
			return nil, nvml.SUCCESS
		}
	}
	inv, err := Snapshot(context.Background(), WithNVML(Options{Vendor: VendorAuto, AMDSMIPath: "/nonexistent/libamd_smi.so"}, s))
	if err != nil || inv.Vendor != VendorNVIDIA || inv.Source != SourceNVML || len(inv.GPUs) != 8 {
		t.Fatalf("%v %+v", err, inv)
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	for i, g := range inv.GPUs {
		m := g.SMI
		if m == nil || m.MemoryUsedBytes != uint64(i)<<30 || *m.TemperatureC != int64(30+i) || m.PowerCapWatts != 700 || m.PowerWatts != 100.5+float64(i) ||
			m.GFXClockMHz != 1980 || m.GFXClockMaxMHz != 0 || m.Processes == nil {
			t.Fatalf("GPU %d: %+v", i, m)
		}
		switch {
		case i == 3 && (len(m.Processes) != 1 || m.Processes[0].Name != strings.TrimSpace(string(comm)) || m.Processes[0].MemoryBytes != 1<<30):
			t.Errorf("GPU 3 processes %+v", m.Processes)
		case i == 5 && (len(m.Unavailable) != 1 || !strings.HasPrefix(m.Unavailable[0], "processes: ")):
			t.Errorf("GPU 5 unavailable %q", m.Unavailable)
		}
	}
	// Detect does not ask for the state (a plain inventory stays cheap).
	if inv, err := Detect(context.Background(), WithNVML(Options{Vendor: VendorNVIDIA}, s)); err != nil || inv.GPUs[0].SMI != nil {
		t.Fatalf("Detect: %v %+v", err, inv.GPUs[0].SMI)
	}

	// go-nvml's mock panics on a method nobody set: the snapshot is an error, not a crash.
	if _, err := Snapshot(context.Background(), WithNVML(Options{Vendor: VendorNVIDIA}, dgxH100(t))); err == nil || !strings.HasPrefix(err.Error(), "NVML: ") {
		t.Fatalf("a mock without state methods: %v", err)
	}
	// No driver: "not found", which diagnostics note and go on.
	_, err = Snapshot(context.Background(), WithNVML(Options{Vendor: VendorNVIDIA}, nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("no driver: %v", err)
	}
	_, err = Snapshot(context.Background(), WithNVML(Options{AMDSMIPath: "/nonexistent/libamd_smi.so"}, nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "AMD SMI: ") || !strings.Contains(err.Error(), "NVML: ") {
		t.Fatalf("neither library: %v", err)
	}
}

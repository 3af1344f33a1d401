//go:build cgo

package gpu

import (
	"context"
	"fmt"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Build says what this build reads GPUs with.
const Build = "cgo: NVIDIA GPUs through NVML (inventory and telemetry), AMD GPUs through AMD SMI where it loads, else sysfs"

// nvmlLibrary is the part of NVML the inventory calls. nvml.New() (the real library, which
// dlopens libnvidia-ml.so.1 at Init) and go-nvml's mock servers satisfy it.
type nvmlLibrary interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return)
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
}

// nvmlDevice is the part of an NVML device handle the inventory calls.
type nvmlDevice interface {
	GetIndex() (int, nvml.Return)
	GetUUID() (string, nvml.Return)
	GetName() (string, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetPciInfo() (nvml.PciInfo, nvml.Return)
	GetMinorNumber() (int, nvml.Return)
	GetCudaComputeCapability() (int, int, nvml.Return)
}

var (
	_ nvmlLibrary = nvml.Interface(nil)
	_ nvmlDevice  = nvml.Device(nil)
)

// detectNVIDIA asks the real NVML; nvml.New() only dlopens libnvidia-ml.so.1 at Init.
func detectNVIDIA(_ context.Context, opts Options) (Inventory, error) {
	return fromNVML(opts, nvml.New(), false)
}

// snapshotNVIDIA asks the real NVML for the inventory with each GPU's state (SMI).
func snapshotNVIDIA(ctx context.Context, opts Options) (Inventory, error) {
	return nvmlSnapshot(ctx, opts, nvml.New())
}

// WithNVML returns opts with lib as the NVML that Detect, Snapshot and OpenSampler ask instead of
// libnvidia-ml.so.1: go-nvml's mock servers (mock/dgxh100) in tests of packages that
// select GPUs, or a caller's own NVML.
func WithNVML(opts Options, lib nvml.Interface) Options {
	opts.nvidia = func(_ context.Context, o Options) (Inventory, error) { return fromNVML(o, lib, false) }
	opts.nvidiaState = func(ctx context.Context, o Options) (Inventory, error) { return nvmlSnapshot(ctx, o, lib) }
	opts.nvidiaSampler = func(ctx context.Context, o Options, inv Inventory) (Sampler, error) {
		return openNVMLSamplerWith(ctx, o, inv, lib)
	}
	return opts
}

// nvmlSnapshot is fromNVML with each GPU's state, bounded by ctx: a driver that does not
// answer leaves the call behind, and a mock without a state method (which panics) is an
// error, not a crash of the diagnostics that asked.
func nvmlSnapshot(ctx context.Context, opts Options, lib nvmlLibrary) (Inventory, error) {
	select {
	case r := <-nvmlCall(func() (Inventory, error) { return fromNVML(opts, lib, true) }):
		return r.v, r.err
	case <-ctx.Done():
		return Inventory{}, fmt.Errorf("NVML: no answer (%w)", ctx.Err())
	}
}

// nvmlResult is what an nvmlCall gave.
type nvmlResult[T any] struct {
	v   T
	err error
}

// nvmlCall runs f on a goroutine of its own and hands its result over the channel (which
// holds it: nobody need receive), a panic (a mock without the method called) as an error.
// The caller waits only as long as its context allows: a driver that does not answer
// leaves the call behind, never the caller.
func nvmlCall[T any](f func() (T, error)) <-chan nvmlResult[T] {
	done := make(chan nvmlResult[T], 1)
	go func() {
		var r nvmlResult[T]
		defer func() {
			if p := recover(); p != nil {
				r = nvmlResult[T]{err: fmt.Errorf("NVML: %v", p)}
			}
			done <- r
		}()
		r.v, r.err = f()
	}()
	return done
}

// fromNVML reads the inventory through NVML, with each GPU's state (SMI) when state is
// set. A missing library (no driver installed) and a driver that is not loaded are "not
// found"; any other NVML failure is an error.
func fromNVML(opts Options, lib nvmlLibrary, state bool) (Inventory, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "libnvidia-ml.so.1 could not be loaded (no NVIDIA driver installed)"}
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "NVML is installed but the NVIDIA kernel driver is not loaded"}
	default:
		return Inventory{}, nvmlError("initialising NVML", ret)
	}
	defer lib.Shutdown()

	inv := Inventory{Vendor: VendorNVIDIA, GPUs: []GPU{}, Source: SourceNVML}
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		inv.Driver = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS && v > 0 {
		inv.Runtime = fmt.Sprintf("%d.%d", v/1000, v%1000/10) // 12040 -> 12.4
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Inventory{}, nvmlError("counting GPUs", ret)
	}
	for i := 0; i < n; i++ {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return Inventory{}, nvmlError(fmt.Sprintf("GPU %d", i), ret)
		}
		g, err := nvmlGPU(opts, i, h)
		if err != nil {
			return Inventory{}, err
		}
		if state {
			g.SMI = nvmlState(opts, h)
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	if len(inv.GPUs) == 0 {
		return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "NVML reports 0 devices"}
	}
	if state {
		nvmlTopology(lib, &inv)
	}
	return inv, nil
}

// nvmlGPU reads one device. Index, UUID, name and memory are required; the rest is filled
// in when NVML answers (older GPUs and drivers do not answer everything).
func nvmlGPU(opts Options, i int, d nvmlDevice) (GPU, error) {
	g := GPU{Index: i, NUMANode: -1}
	var ret nvml.Return
	if g.Index, ret = d.GetIndex(); ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("GPU %d: index", i), ret)
	}
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("GPU %d: UUID", i), ret)
	}
	if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("GPU %d: name", i), ret)
	}
	mem, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("GPU %d: memory", i), ret)
	}
	g.MemoryBytes = mem.Total
	if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		if id := cString(pci.BusId[:]); id != "" {
			g.PCIBusID = normalizePCI(id)
			g.NUMANode = numaNode(opts, g.PCIBusID)
		}
	}
	if major, minor, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS && major > 0 {
		g.Arch = fmt.Sprintf("sm_%d%d", major, minor)
	}
	g.Devices = nvidiaDevices(-1)
	if minor, ret := d.GetMinorNumber(); ret == nvml.SUCCESS {
		g.Devices = nvidiaDevices(minor)
	}
	return g, nil
}

// nvmlStateDevice is the part of an NVML device handle a snapshot calls.
type nvmlStateDevice interface {
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return)
	GetPowerManagementLimit() (uint32, nvml.Return)
	GetPowerUsage() (uint32, nvml.Return)
	GetClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetMaxClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return)
}

var _ nvmlStateDevice = nvml.Device(nil)

// nvmlState reads what one GPU is doing now. Queries the GPU or driver does not support
// are left out; other failures are noted in Unavailable.
func nvmlState(opts Options, d nvmlStateDevice) *SMI {
	s := &SMI{Processes: []Process{}}
	ok := func(what string, ret nvml.Return) bool {
		switch ret {
		case nvml.SUCCESS:
			return true
		case nvml.ERROR_NOT_SUPPORTED:
		default:
			s.Unavailable = append(s.Unavailable, what+": "+ret.Error())
		}
		return false
	}
	if m, ret := d.GetMemoryInfo(); ok("memory", ret) {
		s.MemoryUsedBytes = m.Used
	}
	if c, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); ok("temperature", ret) {
		t := int64(c)
		s.TemperatureC = &t
	}
	if mw, ret := d.GetPowerManagementLimit(); ok("power limit", ret) {
		s.PowerCapWatts = float64(mw) / 1000
	}
	if mw, ret := d.GetPowerUsage(); ok("power", ret) {
		s.PowerWatts = float64(mw) / 1000
	}
	if c, ret := d.GetClockInfo(nvml.CLOCK_GRAPHICS); ok("graphics clock", ret) {
		s.GFXClockMHz = c
	}
	if c, ret := d.GetMaxClockInfo(nvml.CLOCK_GRAPHICS); ok("graphics clock", ret) {
		s.GFXClockMaxMHz = c
	}
	if c, ret := d.GetClockInfo(nvml.CLOCK_MEM); ok("memory clock", ret) {
		s.MemClockMHz = c
	}
	if c, ret := d.GetMaxClockInfo(nvml.CLOCK_MEM); ok("memory clock", ret) {
		s.MemClockMaxMHz = c
	}
	if procs, ret := d.GetComputeRunningProcesses(); ok("processes", ret) {
		for _, p := range procs {
			s.Processes = append(s.Processes, Process{PID: p.Pid, Name: processName(opts, p.Pid), MemoryBytes: p.UsedGpuMemory})
		}
	}
	return s
}

// processName is /proc/<pid>/comm under the root; "" when the process is gone or in
// another PID namespace.
func processName(opts Options, pid uint32) string {
	return readLine(opts, "proc", strconv.FormatUint(uint64(pid), 10), "comm")
}

// cString reads NVML's NUL-terminated char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func nvmlError(what string, ret nvml.Return) error {
	return fmt.Errorf("NVML: %s: %s (code %d)", what, ret.Error(), int(ret))
}

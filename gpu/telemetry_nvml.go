//go:build cgo

package gpu

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlTelemetryDevice is the part of an NVML device handle the sampler calls.
type nvmlTelemetryDevice interface {
	GetPowerUsage() (uint32, nvml.Return)              // milliwatts
	GetTotalEnergyConsumption() (uint64, nvml.Return)  // millijoules since the driver was loaded (Volta and later)
	GetClockInfo(nvml.ClockType) (uint32, nvml.Return) // MHz
	GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return)
	GetUtilizationRates() (nvml.Utilization, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetCurrentClocksEventReasons() (uint64, nvml.Return)    // drivers from 535
	GetCurrentClocksThrottleReasons() (uint64, nvml.Return) // the older name, for older drivers
}

var _ nvmlTelemetryDevice = nvml.Device(nil)

// openNVMLSampler samples the real NVML.
func openNVMLSampler(ctx context.Context, opts Options, inv Inventory) (Sampler, error) {
	return openNVMLSamplerWith(ctx, opts, inv, nvml.New())
}

// openNVMLSamplerWith initialises lib (bounded by ctx: a driver that does not answer
// leaves the call behind), finds inv's GPUs among its devices and keeps lib initialised
// until Close.
func openNVMLSamplerWith(ctx context.Context, opts Options, inv Inventory, lib nvmlLibrary) (Sampler, error) {
	done := nvmlCall(func() ([]nvmlTelemetryDevice, error) { return nvmlTelemetryDevices(opts, inv, lib) })
	var r nvmlResult[[]nvmlTelemetryDevice]
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() { // an open that answers after all is shut down again
			if r := <-done; r.err == nil {
				lib.Shutdown()
			}
		}()
		return nil, fmt.Errorf("NVML: no answer (%w)", ctx.Err())
	}
	if r.err != nil {
		return nil, r.err
	}
	s := &nvmlSampler{devs: r.v, u: &unavailable{}, gpus: inv.GPUs}
	return newBoundedSampler(SourceNVML, inv, s.u, s.read, func() error {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			return nvmlError("shutting NVML down", ret)
		}
		return nil
	}), nil
}

// nvmlTelemetryDevices initialises lib and returns the handles of inv's GPUs, in order.
func nvmlTelemetryDevices(opts Options, inv Inventory, lib nvmlLibrary) ([]nvmlTelemetryDevice, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, &NotFoundError{Vendor: VendorNVIDIA, Reason: "NVML: " + ret.Error()}
	default:
		return nil, nvmlError("initialising NVML", ret)
	}
	ok := false
	defer func() {
		if !ok {
			lib.Shutdown()
		}
	}()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, nvmlError("counting GPUs", ret)
	}
	var all []GPU
	var handles []nvml.Device
	for i := 0; i < n; i++ {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("GPU %d", i), ret)
		}
		g, err := nvmlGPU(opts, i, h)
		if err != nil {
			return nil, err
		}
		all, handles = append(all, g), append(handles, h)
	}
	found, err := matchGPUs("NVML", inv, all)
	if err != nil {
		return nil, err
	}
	devs := make([]nvmlTelemetryDevice, len(found))
	for i, j := range found {
		devs[i] = handles[j]
	}
	ok = true
	return devs, nil
}

// nvmlSampler reads each GPU's telemetry through NVML.
type nvmlSampler struct {
	devs []nvmlTelemetryDevice
	gpus []GPU
	u    *unavailable
	// eventsMissing: the driver has no nvmlDeviceGetCurrentClocksEventReasons (before
	// 535), so the older GetCurrentClocksThrottleReasons is asked.
	eventsMissing bool
}

func (s *nvmlSampler) read() []Reading {
	out := make([]Reading, len(s.devs))
	for i, d := range s.devs {
		out[i] = s.readGPU(s.gpus[i].Index, d)
	}
	return out
}

// nvmlLost are the answers that mean the GPU itself is gone, not one fact.
func nvmlLost(ret nvml.Return) bool {
	return ret == nvml.ERROR_GPU_IS_LOST || ret == nvml.ERROR_UNINITIALIZED || ret == nvml.ERROR_DRIVER_NOT_LOADED
}

// readGPU reads one GPU. A call that fails leaves its field nil and is recorded once; a
// call that panics (a mock without the method) likewise; an answer that says the GPU is
// lost ends the read with Err.
func (s *nvmlSampler) readGPU(idx int, d nvmlTelemetryDevice) (r Reading) {
	r.Index = idx
	var lost error
	// call runs f, which calls NVML and returns its answer; true when it succeeded.
	call := func(field string, f func() nvml.Return) (ok bool) {
		if lost != nil {
			return false
		}
		defer func() {
			if p := recover(); p != nil {
				s.u.add(idx, field, fmt.Sprintf("NVML: %v", p))
				ok = false
			}
		}()
		ret := f()
		switch {
		case ret == nvml.SUCCESS:
			return true
		case nvmlLost(ret):
			lost = fmt.Errorf("NVML: the GPU stopped answering: %s (code %d)", ret.Error(), int(ret))
		case ret == nvml.ERROR_NOT_SUPPORTED:
			s.u.add(idx, field, "not supported by this GPU or driver (NVML: "+ret.Error()+")")
		default:
			s.u.add(idx, field, fmt.Sprintf("NVML: %s (code %d)", ret.Error(), int(ret)))
		}
		return false
	}
	var mw uint32
	if call("power", func() (ret nvml.Return) { mw, ret = d.GetPowerUsage(); return }) {
		r.PowerW = ptr(float64(mw) / 1000)
	}
	var mj uint64
	if call("energy", func() (ret nvml.Return) { mj, ret = d.GetTotalEnergyConsumption(); return }) {
		r.EnergyJ = ptr(float64(mj) / 1000)
	}
	var sm, mem, temp uint32
	if call("gfxClock", func() (ret nvml.Return) { sm, ret = d.GetClockInfo(nvml.CLOCK_SM); return }) {
		r.GFXClockMHz = ptr(sm)
	}
	if call("memClock", func() (ret nvml.Return) { mem, ret = d.GetClockInfo(nvml.CLOCK_MEM); return }) {
		r.MemClockMHz = ptr(mem)
	}
	if call("temperature", func() (ret nvml.Return) { temp, ret = d.GetTemperature(nvml.TEMPERATURE_GPU); return }) {
		r.TemperatureC = ptr(float64(temp))
	}
	var util nvml.Utilization
	if call("util", func() (ret nvml.Return) { util, ret = d.GetUtilizationRates(); return }) {
		r.UtilPercent = ptr(float64(util.Gpu))
	}
	var m nvml.Memory
	if call("memoryUsed", func() (ret nvml.Return) { m, ret = d.GetMemoryInfo(); return }) {
		r.MemoryUsedBytes = ptr(m.Used)
	}
	var reasons uint64
	if s.throttleReasons(call, d, &reasons) {
		r.Throttle, r.ThrottleKnown = nvmlThrottle(reasons), true
	}
	if lost != nil {
		s.u.add(idx, "gpu", lost.Error())
		return Reading{Index: idx, Err: lost}
	}
	return r
}

// throttleReasons asks for the clock event reasons, falling back to the older clock
// throttle reasons (the same bits) on a driver that lacks the newer call.
func (s *nvmlSampler) throttleReasons(call func(string, func() nvml.Return) bool, d nvmlTelemetryDevice, reasons *uint64) bool {
	if !s.eventsMissing {
		missing := false
		ok := call("throttle", func() (ret nvml.Return) {
			defer func() {
				if p := recover(); p != nil {
					missing = true
				}
				if missing {
					ret = nvml.SUCCESS // decided below, without recording it
				}
			}()
			*reasons, ret = d.GetCurrentClocksEventReasons()
			missing = ret == nvml.ERROR_FUNCTION_NOT_FOUND
			return ret
		})
		if !missing {
			return ok
		}
		s.eventsMissing = true
	}
	return call("throttle", func() (ret nvml.Return) { *reasons, ret = d.GetCurrentClocksThrottleReasons(); return })
}

// nvmlThrottle maps NVML's clock event reasons (nvml.h, the same bits as the older
// "clocks throttle reasons") to Throttle:
//
//	SW power cap (0x4), HW power brake slowdown (0x80)              -> power
//	SW thermal slowdown (0x20), HW thermal slowdown (0x40)          -> thermal
//	HW slowdown (0x8) without HW thermal or power brake, reliability (0x400) -> reliability
//	applications clocks (0x2), sync boost (0x10), display clock (0x100), board limit (0x200) -> other
//	GPU idle (0x1)                                                  -> nothing
//
// HW slowdown is also set when HW thermal slowdown or the power brake is; then only those
// count. Board limit is an operating policy, recorded rather than judged.
func nvmlThrottle(r uint64) Throttle {
	var t Throttle
	if r&(nvml.ClocksEventReasonSwPowerCap|nvml.ClocksThrottleReasonHwPowerBrakeSlowdown) != 0 {
		t |= ThrottlePower
	}
	if r&(nvml.ClocksEventReasonSwThermalSlowdown|nvml.ClocksThrottleReasonHwThermalSlowdown) != 0 {
		t |= ThrottleThermal
	}
	if r&nvml.ClocksThrottleReasonHwSlowdown != 0 && r&(nvml.ClocksThrottleReasonHwThermalSlowdown|nvml.ClocksThrottleReasonHwPowerBrakeSlowdown) == 0 {
		t |= ThrottleReliability
	}
	if r&nvml.ClocksEventReasonReliability != 0 {
		t |= ThrottleReliability
	}
	if r&(nvml.ClocksEventReasonApplicationsClocksSetting|nvml.ClocksEventReasonSyncBoost|nvml.ClocksEventReasonDisplayClockSetting|nvml.ClocksEventReasonBoardLimit) != 0 {
		t |= ThrottleOther
	}
	return t
}

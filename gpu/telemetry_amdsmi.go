package gpu

import (
	"context"
	"fmt"
	"math"
)

// AMD SMI answers that mean the GPU itself is gone rather than one fact.
const (
	statusInval    uint32 = 1  // AMDSMI_STATUS_INVAL: the handle no longer names a GPU
	statusNotFound uint32 = 31 // AMDSMI_STATUS_NOT_FOUND
	statusNotInit  uint32 = 32 // AMDSMI_STATUS_NOT_INIT
)

// openAMDSMISampler opens an AMD SMI session that lasts until Close: amdsmi_init, the
// version's layouts, the processor handles of inv's GPUs (matched on the PCI address).
// Each Sample takes the library for the length of its reads only, so diagnostics and
// doctor can open their own sessions meanwhile (amdsmi_init counts its callers); a
// Sample that finds the library held longer than its context answers with every GPU in
// error.
func openAMDSMISampler(ctx context.Context, opts Options, inv Inventory) (Sampler, error) {
	l, err := openAMDSMI(opts)
	if err != nil {
		return nil, err
	}
	type opened struct {
		s   *amdsmiSampler
		err error
	}
	done := make(chan opened, 1)
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, &AMDSMIError{Path: l.path, Reason: "an earlier call into the library has not returned (" + ctx.Err().Error() + ")"}
	}
	go func() {
		var o opened
		func() {
			defer func() { <-l.sem }() // released before the answer goes back
			o.s, o.err = l.openSampler(inv)
		}()
		done <- o
	}()
	var o opened
	select {
	case o = <-done:
	case <-ctx.Done():
		go func() { // a session that opens after all is closed again
			if o := <-done; o.err == nil {
				o.s.close()
			}
		}()
		return nil, &AMDSMIError{Path: l.path, Reason: "no answer (" + ctx.Err().Error() + "); the call goes on in the background"}
	}
	if o.err != nil {
		return nil, o.err
	}
	s := o.s
	return newBoundedSampler(SourceAMDSMI, inv, s.u, s.read, s.close), nil
}

// amdsmiSampler reads inv's GPUs through a session of l.
type amdsmiSampler struct {
	l       *amdsmiLoaded
	s       *smiSession
	handles []uintptr
	gpus    []GPU
	u       *unavailable
}

// openSampler starts the session; the caller holds l.sem.
func (l *amdsmiLoaded) openSampler(inv Inventory) (*amdsmiSampler, error) {
	s := &smiSession{lib: l.lib, path: l.path}
	if st := l.lib.Init(); st != statusSuccess {
		return nil, s.fail("amdsmi_init", st)
	}
	ok := false
	defer func() {
		if !ok {
			l.lib.ShutDown()
		}
	}()
	words, st := l.lib.Version()
	if st != statusSuccess {
		return nil, s.fail("amdsmi_get_lib_version", st)
	}
	if s.abi, s.version = smiVersion(words); s.abi == 0 {
		return nil, &AMDSMIError{Path: l.path, Reason: "version " + s.version + " is not one whose structures benchctl knows"}
	}
	hs, st := l.lib.Processors()
	if st != statusSuccess {
		return nil, s.fail("amdsmi_get_socket_handles/amdsmi_get_processor_handles", st)
	}
	devs := make([]GPU, len(hs))
	for i, h := range hs {
		bdf, st := l.lib.BDF(h)
		if st != statusSuccess {
			return nil, s.fail(fmt.Sprintf("amdsmi_get_gpu_device_bdf on GPU %d", i), st)
		}
		devs[i] = GPU{Index: -1, PCIBusID: normalizePCI(bdf)}
	}
	// Only the PCI address joins the library's GPUs to the inventory's (its order and
	// serials need not be KFD's), so the inventory's GPUs are matched on it alone.
	want := inv
	want.GPUs = make([]GPU, len(inv.GPUs))
	for i, g := range inv.GPUs {
		if g.PCIBusID == "" {
			return nil, &AMDSMIError{Path: l.path, Reason: fmt.Sprintf("GPU %d has no PCI address to find it in the library by", g.Index)}
		}
		want.GPUs[i] = GPU{Index: g.Index, PCIBusID: g.PCIBusID}
	}
	found, err := matchGPUs("the AMD SMI library", want, devs)
	if err != nil {
		return nil, &AMDSMIError{Path: l.path, Reason: err.Error()}
	}
	a := &amdsmiSampler{l: l, s: s, gpus: inv.GPUs, u: &unavailable{}}
	for _, j := range found {
		a.handles = append(a.handles, hs[j])
	}
	ok = true
	return a, nil
}

// read takes the library for one round of reads. It waits for another session (a
// snapshot) to end; the Sample that runs it gives up at its context meanwhile.
func (a *amdsmiSampler) read() []Reading {
	a.l.sem <- struct{}{}
	defer func() { <-a.l.sem }()
	out := make([]Reading, len(a.handles))
	for i, h := range a.handles {
		out[i] = a.readGPU(a.gpus[i].Index, h)
	}
	return out
}

func (a *amdsmiSampler) readGPU(idx int, h uintptr) Reading {
	r := Reading{Index: idx}
	lib := a.s.lib
	var lost error
	ok := func(field, call string, st uint32) bool {
		switch {
		case st == statusSuccess:
			return true
		case lost != nil:
		case st == statusNotFound || st == statusInval || st == statusNotInit:
			lost = fmt.Errorf("amdsmi: the GPU stopped answering: %s: %s", call, a.s.status(st))
		case st == statusMissing:
			a.u.add(idx, field, "the library lacks "+call)
		case st == statusNotSupported:
			a.u.add(idx, field, "not supported by this GPU or driver ("+call+")")
		default:
			a.u.add(idx, field, call+": "+a.s.status(st))
		}
		return false
	}
	if w, st := lib.Power(a.s.abi, h); ok("power", "amdsmi_get_power_info", st) {
		r.PowerW = ptr(float64(w))
	}
	if n, res, st := lib.Energy(h); ok("energy", "amdsmi_get_energy_count", st) {
		if res > 0 && !math.IsInf(res, 0) && !math.IsNaN(res) {
			r.EnergyJ = ptr(float64(n) * res / 1e6)
		} else {
			a.u.add(idx, "energy", fmt.Sprintf("amdsmi_get_energy_count gave a counter resolution of %g µJ", res))
		}
	}
	if cur, _, st := lib.Clock(h, false); ok("gfxClock", "amdsmi_get_clock_info", st) {
		r.GFXClockMHz = ptr(cur)
	}
	if cur, _, st := lib.Clock(h, true); ok("memClock", "amdsmi_get_clock_info", st) {
		r.MemClockMHz = ptr(cur)
	}
	c, st := lib.Temperature(h, true)
	if st == statusNotSupported {
		c, st = lib.Temperature(h, false)
	}
	if ok("temperature", "amdsmi_get_temp_metric", st) {
		r.TemperatureC = ptr(float64(c))
	}
	if g, st := lib.Activity(h); ok("util", "amdsmi_get_gpu_activity", st) {
		r.UtilPercent = ptr(float64(g))
	}
	if _, used, st := lib.VRAM(h); ok("memoryUsed", "amdsmi_get_gpu_vram_usage", st) {
		r.MemoryUsedBytes = ptr(used)
	}
	if f, c, indep, st := lib.Throttle(h); ok("throttle", "amdsmi_get_gpu_metrics_info", st) {
		if f == 1 && c >= 3 && indep != math.MaxUint64 {
			r.Throttle, r.ThrottleKnown = amdThrottle(indep), true
		} else {
			a.u.add(idx, "throttle", fmt.Sprintf("the GPU's metrics table (v%d.%d) has no ASIC-independent throttle status (from v1.3)", f, c))
		}
	}
	if lost != nil {
		a.u.add(idx, "gpu", lost.Error())
		return Reading{Index: idx, Err: lost}
	}
	return r
}

// close ends the session, waiting for a read still running up to amdsmiTimeout.
func (a *amdsmiSampler) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), amdsmiTimeout)
	defer cancel()
	select {
	case a.l.sem <- struct{}{}:
	case <-ctx.Done():
		return &AMDSMIError{Path: a.l.path, Reason: "amdsmi_shut_down not called: an earlier call has not returned"}
	}
	defer func() { <-a.l.sem }()
	if st := a.s.lib.ShutDown(); st != statusSuccess {
		return a.s.fail("amdsmi_shut_down", st)
	}
	return nil
}

// amdThrottle maps the gpu metrics table's indep_throttle_status (the kernel's
// ASIC-independent SMU_THROTTLER_*_BIT, drivers/gpu/drm/amd/pm/swsmu/inc/smu_types.h) to
// Throttle:
//
//	PPT0-3, SPL, FPPT, SPPT, SPPT_APU (bits 0-7)                  -> power
//	TEMP_GPU, CORE, MEM, EDGE, HOTSPOT, SOC, VR_*, LIQUID* (32-43) -> thermal
//	TDC_*, EDC_* (current, 16-22), APCC (23), VRHOT0-1 (44-45),
//	PROCHOT_CPU, PROCHOT_GFX (46-47), PPM (56), FIT (57)           -> reliability
//	any bit the kernel does not define                              -> other
func amdThrottle(b uint64) Throttle {
	const (
		power       = 0xff
		thermal     = 0xfff << 32
		reliability = 0xff<<16 | 0xf<<44 | 1<<56 | 1<<57
	)
	var t Throttle
	if b&power != 0 {
		t |= ThrottlePower
	}
	if b&thermal != 0 {
		t |= ThrottleThermal
	}
	if b&reliability != 0 {
		t |= ThrottleReliability
	}
	if b&^uint64(power|thermal|reliability) != 0 {
		t |= ThrottleOther
	}
	return t
}

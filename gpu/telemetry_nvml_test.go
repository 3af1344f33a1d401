//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// h100Telemetry is the DGX H100 mock with every telemetry call answered: GPU i draws
// 100+i W, its energy counter grows by 1000 mJ a call, SM 1980 MHz, memory 2619 MHz,
// 40+i °C, 50 % busy, 1 GiB used, no clock event reasons.
func h100Telemetry(t testing.TB) *server.Server {
	s := dgxH100(t)
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		var energy atomic.Uint64
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100000 + 1000*i), nvml.SUCCESS }
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return energy.Add(1000), nvml.SUCCESS }
		dev.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			switch c {
			case nvml.CLOCK_SM:
				return 1980, nvml.SUCCESS
			case nvml.CLOCK_MEM:
				return 2619, nvml.SUCCESS
			}
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(40 + i), nvml.SUCCESS }
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 50, Memory: 20}, nvml.SUCCESS }
		dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Used: 1 << 30, Free: 79 << 30}, nvml.SUCCESS
		}
		dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	}
	return s
}

func nvmlSamplerFor(t testing.TB, s *server.Server, pick ...int) Sampler {
	t.Helper()
	opts := WithNVML(Options{Vendor: VendorNVIDIA, SysfsRoot: "/nonexistent"}, s)
	inv, err := Detect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if pick != nil {
		var gpus []GPU
		for _, p := range pick {
			gpus = append(gpus, inv.GPUs[p])
		}
		inv.GPUs = gpus
	}
	smp, err := OpenSampler(context.Background(), opts, inv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { smp.Close() })
	return smp
}

func TestNVMLSamplerReadsEveryFact(t *testing.T) {
	smp := nvmlSamplerFor(t, h100Telemetry(t), 6, 2) // the selected GPUs, in the order given
	if smp.Source() != "nvml" {
		t.Errorf("source %q", smp.Source())
	}
	rs := smp.Sample(context.Background())
	if len(rs) != 2 || rs[0].Index != 6 || rs[1].Index != 2 {
		t.Fatalf("readings %+v", rs)
	}
	r := rs[0]
	if r.Err != nil || *r.PowerW != 106 || *r.EnergyJ != 1 || *r.GFXClockMHz != 1980 || *r.MemClockMHz != 2619 ||
		*r.TemperatureC != 46 || *r.UtilPercent != 50 || *r.MemoryUsedBytes != 1<<30 || !r.ThrottleKnown || r.Throttle != 0 {
		t.Errorf("GPU 6: %+v", r)
	}
	if *rs[1].PowerW != 102 {
		t.Errorf("GPU 2 draws %v W, want 102 (another GPU's reading?)", *rs[1].PowerW)
	}
	if u := smp.Unavailable(); len(u) != 0 {
		t.Errorf("unavailable %+v", u)
	}
	if err := smp.Close(); err != nil || smp.Close() != nil {
		t.Errorf("Close: %v", err)
	}
}

// Each clock event reason lands in its group; idle in none.
func TestNVMLClockEventReasons(t *testing.T) {
	cases := []struct {
		bits uint64
		want Throttle
	}{
		{0, 0},
		{nvml.ClocksEventReasonGpuIdle, 0},
		{nvml.ClocksEventReasonSwPowerCap, ThrottlePower},
		{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown | nvml.ClocksThrottleReasonHwSlowdown, ThrottlePower},
		{nvml.ClocksEventReasonSwThermalSlowdown, ThrottleThermal},
		{nvml.ClocksThrottleReasonHwThermalSlowdown | nvml.ClocksThrottleReasonHwSlowdown, ThrottleThermal},
		{nvml.ClocksThrottleReasonHwSlowdown, ThrottleReliability},
		{nvml.ClocksEventReasonReliability, ThrottleReliability},
		{nvml.ClocksEventReasonApplicationsClocksSetting, ThrottleOther},
		{nvml.ClocksEventReasonSyncBoost, ThrottleOther},
		{nvml.ClocksEventReasonDisplayClockSetting, ThrottleOther},
		{nvml.ClocksEventReasonBoardLimit, ThrottleOther},
		{nvml.ClocksEventReasonSwPowerCap | nvml.ClocksEventReasonSwThermalSlowdown | nvml.ClocksEventReasonGpuIdle, ThrottlePower | ThrottleThermal},
	}
	s := h100Telemetry(t)
	var bits atomic.Uint64
	s.Devices[0].(*server.Device).GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return bits.Load(), nvml.SUCCESS }
	smp := nvmlSamplerFor(t, s, 0)
	for _, c := range cases {
		bits.Store(c.bits)
		r := smp.Sample(context.Background())[0]
		if !r.ThrottleKnown || r.Throttle != c.want {
			t.Errorf("reasons %#x: %q (known %v), want %q", c.bits, r.Throttle, r.ThrottleKnown, c.want)
		}
	}
	if (ThrottlePower|ThrottleReliability).String() != "power+reliability" || !ThrottleThermal.Limiting() || ThrottleOther.Limiting() {
		t.Error("Throttle's String or Limiting")
	}
}

// A driver without the clock event reasons call (before 535) is asked the older one.
func TestNVMLThrottleReasonsOnAnOlderDriver(t *testing.T) {
	s := h100Telemetry(t)
	dev := s.Devices[0].(*server.Device)
	var newer, older atomic.Int32
	dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { newer.Add(1); return 0, nvml.ERROR_FUNCTION_NOT_FOUND }
	dev.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
		older.Add(1)
		return nvml.ClocksThrottleReasonSwThermalSlowdown, nvml.SUCCESS
	}
	smp := nvmlSamplerFor(t, s, 0)
	for i := 0; i < 3; i++ {
		if r := smp.Sample(context.Background())[0]; r.Throttle != ThrottleThermal || !r.ThrottleKnown {
			t.Fatalf("sample %d: %+v", i, r)
		}
	}
	if newer.Load() != 1 || older.Load() != 3 {
		t.Errorf("asked the newer call %d times and the older %d, want 1 and 3", newer.Load(), older.Load())
	}
	if u := smp.Unavailable(); len(u) != 0 {
		t.Errorf("unavailable %+v", u)
	}
}

// No energy counter: the field is nil every time and said once. A counter that goes
// backwards (a driver reload) is reported raw: the caller handles resets.
func TestNVMLEnergyCounterMissingOrBackwards(t *testing.T) {
	s := h100Telemetry(t)
	s.Devices[0].(*server.Device).GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	counter := []uint64{5_000_000, 6_000_000, 1_000}
	var n atomic.Int32
	s.Devices[1].(*server.Device).GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		return counter[int(n.Add(1)-1)%len(counter)], nvml.SUCCESS
	}
	smp := nvmlSamplerFor(t, s, 0, 1)
	var got []float64
	for i := 0; i < 3; i++ {
		rs := smp.Sample(context.Background())
		if rs[0].EnergyJ != nil || rs[0].PowerW == nil {
			t.Fatalf("GPU 0 sample %d: %+v", i, rs[0])
		}
		got = append(got, *rs[1].EnergyJ)
	}
	if fmt.Sprint(got) != "[5000 6000 1]" {
		t.Errorf("GPU 1's counter %v, want [5000 6000 1] (raw, in joules)", got)
	}
	u := smp.Unavailable()
	if len(u) != 1 || u[0].GPU != 0 || u[0].Field != "energy" || !strings.Contains(u[0].Why, "not supported") {
		t.Errorf("unavailable %+v", u)
	}
}

// A GPU that falls off the bus mid-run is a Reading with Err, said once; the others go on.
func TestNVMLGPULostMidRun(t *testing.T) {
	s := h100Telemetry(t)
	var gone atomic.Bool
	dev := s.Devices[3].(*server.Device)
	power := dev.GetPowerUsageFunc
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		if gone.Load() {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		return power()
	}
	smp := nvmlSamplerFor(t, s)
	if r := smp.Sample(context.Background())[3]; r.Err != nil || r.PowerW == nil {
		t.Fatalf("before: %+v", r)
	}
	gone.Store(true)
	for i := 0; i < 5; i++ {
		rs := smp.Sample(context.Background())
		if r := rs[3]; r.Err == nil || !strings.Contains(r.Err.Error(), "stopped answering") || r.PowerW != nil || r.EnergyJ != nil {
			t.Fatalf("after, sample %d: %+v", i, r)
		}
		if rs[4].Err != nil || rs[4].PowerW == nil {
			t.Fatalf("GPU 4 should go on: %+v", rs[4])
		}
	}
	u := smp.Unavailable()
	if len(u) != 1 || u[0] != (Unavailable{GPU: 3, Field: "gpu", Why: u[0].Why}) {
		t.Errorf("unavailable %+v", u)
	}
}

// go-nvml's plain DGX H100 mock answers none of the telemetry calls (each panics): 100
// samples never crash, and each fact of each GPU is unavailable exactly once.
func TestNVMLUnavailableSaidOnceIn100Samples(t *testing.T) {
	smp := nvmlSamplerFor(t, dgxH100(t))
	for i := 0; i < 100; i++ {
		for _, r := range smp.Sample(context.Background()) {
			if r.Err != nil || r.PowerW != nil || r.EnergyJ != nil || r.ThrottleKnown {
				t.Fatalf("sample %d: %+v", i, r)
			}
		}
	}
	u := smp.Unavailable()
	seen := map[string]bool{}
	for _, x := range u {
		k := fmt.Sprint(x.GPU, x.Field)
		if seen[k] {
			t.Errorf("%s said twice", k)
		}
		seen[k] = true
		if !strings.Contains(x.Why, "method is nil") {
			t.Errorf("%+v: want the panic's message", x)
		}
	}
	// power, energy, gfxClock, memClock, temperature (memory info is mocked), util, throttle
	if len(u) != 8*7 {
		t.Errorf("%d unavailable, want 56: %+v", len(u), u)
	}
}

// A driver call that does not return holds neither Sample nor the samples after it: the
// first waits only until its context ends, the second not at all; once the call returns,
// Sample reads again. In a synctest bubble: the context's 50 ms pass on its fake clock.
func TestNVMLSampleDoesNotBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := h100Telemetry(t)
		release := make(chan struct{})
		var wedged atomic.Bool
		dev := s.Devices[0].(*server.Device)
		power := dev.GetPowerUsageFunc
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) {
			if wedged.Load() {
				<-release
			}
			return power()
		}
		smp := nvmlSamplerFor(t, s, 0)
		wedged.Store(true)
		const wait = 50 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		start := time.Now()
		r := smp.Sample(ctx)[0]
		if r.Err == nil || !errors.Is(r.Err, context.DeadlineExceeded) {
			t.Fatalf("wedged: %+v", r)
		}
		r = smp.Sample(context.Background())[0] // at once: the first read still runs
		if r.Err == nil || !strings.Contains(r.Err.Error(), "has not returned") {
			t.Fatalf("second: %+v", r)
		}
		if d := time.Since(start); d > wait { // the bubble's clock
			t.Fatalf("the two samples took %v, more than the first one's context (%v)", d, wait)
		}
		wedged.Store(false)
		close(release)
		synctest.Wait() // the wedged read returns
		if r = smp.Sample(context.Background())[0]; r.Err != nil || r.PowerW == nil {
			t.Fatalf("after release: %+v", r)
		}
	})
}

func TestOpenSamplerWithoutGPUs(t *testing.T) {
	for _, inv := range []Inventory{{Vendor: VendorNone, GPUs: []GPU{}}, {Vendor: VendorNVIDIA}} {
		if _, err := OpenSampler(context.Background(), Options{}, inv); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no GPU telemetry") {
			t.Errorf("%+v: %v", inv, err)
		}
	}
	// A GPU NVML does not list is an error naming it.
	s := h100Telemetry(t)
	opts := WithNVML(Options{Vendor: VendorNVIDIA}, s)
	inv := Inventory{Vendor: VendorNVIDIA, GPUs: []GPU{{Index: 9, UUID: "GPU-not-here"}}}
	if _, err := OpenSampler(context.Background(), opts, inv); err == nil || !strings.Contains(err.Error(), "NVML does not list GPU 9 (GPU-not-here)") {
		t.Errorf("unknown GPU: %v", err)
	}
}

// BenchmarkSampleNVML8 is one Sample of the eight GPUs of the DGX H100 mock, every fact
// answered: the sampler's own cost, without the driver's.
func BenchmarkSampleNVML8(b *testing.B) {
	smp := nvmlSamplerFor(b, h100Telemetry(b))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		smp.Sample(ctx)
	}
}

// An NVML that initialises only after the caller gave up is shut down again. In a
// synctest bubble: the context's 20 ms pass on its fake clock.
func TestNVMLOpenAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := h100Telemetry(t)
		release := make(chan struct{})
		var inits, shutdowns atomic.Int32
		s.InitFunc = func() nvml.Return { <-release; inits.Add(1); return nvml.SUCCESS }
		s.ShutdownFunc = func() nvml.Return { shutdowns.Add(1); return nvml.SUCCESS }
		inv := Inventory{Vendor: VendorNVIDIA, GPUs: []GPU{{Index: 0, UUID: s.Devices[0].(*server.Device).UUID}}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := OpenSampler(ctx, WithNVML(Options{}, s), inv); err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v", err)
		}
		close(release)
		synctest.Wait() // the abandoned open runs to its end
		if inits.Load() != 1 || shutdowns.Load() != 1 {
			t.Errorf("%d inits, %d shutdowns", inits.Load(), shutdowns.Load())
		}
	})
}

// A caller that stops (a cancelled context) is not a GPU that stopped answering.
func TestSampleCancelledIsNotUnavailable(t *testing.T) {
	smp := nvmlSamplerFor(t, h100Telemetry(t), 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := smp.Sample(ctx)[0]; r.Err == nil || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("%+v", r)
	}
	if u := smp.Unavailable(); len(u) != 0 {
		t.Errorf("unavailable %+v", u)
	}
}

//go:build cgo && linux

package gpu

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func amdsmiSamplerFor(t testing.TB, opts Options) (Sampler, Inventory) {
	t.Helper()
	inv, err := Detect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := OpenSampler(context.Background(), opts, inv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { smp.Close() })
	return smp, inv
}

func TestAMDSMISampler(t *testing.T) {
	for _, version := range []string{"26.1.0", "24.6.1"} {
		t.Run(version, func(t *testing.T) {
			t.Setenv("FAKE_AMDSMI_VERSION", version)
			smp, inv := amdsmiSamplerFor(t, withFake(t, fakeAMDSMI(t)))
			if smp.Source() != "amdsmi" {
				t.Fatalf("source %q", smp.Source())
			}
			var rs []Reading
			for i := 0; i < 3; i++ {
				rs = smp.Sample(context.Background())
			}
			// KFD index 6 (0000:bf:00.0) is the fake's third GPU: 320 W, 97 % busy, 12571 MiB.
			r := rs[6]
			if len(rs) != 8 || r.Index != 6 || r.Err != nil || *r.PowerW != 320 || *r.GFXClockMHz != 132 || *r.MemClockMHz != 900 ||
				*r.TemperatureC != 43 || *r.UtilPercent != 97 || *r.MemoryUsedBytes != 12571<<20 || !r.ThrottleKnown || r.Throttle != 0 {
				t.Fatalf("GPU 6: %+v", r)
			}
			// Three reads of a counter that grows 1,000,000 counts a read, at 15.259 µJ a count.
			if math.Abs(*r.EnergyJ-3*15.259) > 1e-3 {
				t.Errorf("energy %v J, want 45.777", *r.EnergyJ)
			}
			if *rs[0].PowerW != 340 || inv.GPUs[0].PCIBusID != "0000:0c:00.0" {
				t.Errorf("GPU 0 (0000:0c:00.0, the fake's fifth): %v W", *rs[0].PowerW)
			}
			if u := smp.Unavailable(); len(u) != 0 {
				t.Errorf("unavailable %+v", u)
			}
		})
	}
}

// indep_throttle_status's bits, read through the library (both layouts share the head of
// amdsmi_gpu_metrics_t), land in their groups; a table older than v1.3 has none.
func TestAMDSMIThrottleStatus(t *testing.T) {
	cases := []struct {
		bits string
		want Throttle
	}{
		{"0", 0},
		{"1", ThrottlePower},                            // PPT0
		{"80", ThrottlePower},                           // SPPT_APU
		{"1000000000", ThrottleThermal},                 // TEMP_GPU (32)
		{"80000000000", ThrottleThermal},                // TEMP_LIQUID1 (43)
		{"10000", ThrottleReliability},                  // TDC_GFX (16)
		{"100000000000", ThrottleReliability},           // VRHOT0 (44)
		{"800000000000", ThrottleReliability},           // PROCHOT_GFX (47)
		{"200000000000000", ThrottleReliability},        // FIT (57)
		{"100", ThrottleOther},                          // bit 8: not defined
		{"1000000010", ThrottlePower | ThrottleThermal}, // SPL and TEMP_GPU
	}
	for _, version := range []string{"26.1.0", "24.6.1"} {
		t.Run(version, func(t *testing.T) {
			t.Setenv("FAKE_AMDSMI_VERSION", version)
			smp, _ := amdsmiSamplerFor(t, withFake(t, fakeAMDSMI(t)))
			for _, c := range cases {
				t.Setenv("FAKE_AMDSMI_THROTTLE", c.bits)
				if r := smp.Sample(context.Background())[3]; !r.ThrottleKnown || r.Throttle != c.want {
					t.Errorf("indep_throttle_status 0x%s: %q (known %v), want %q", c.bits, r.Throttle, r.ThrottleKnown, c.want)
				}
			}
			t.Setenv("FAKE_AMDSMI_THROTTLE", "old")
			if r := smp.Sample(context.Background())[3]; r.ThrottleKnown {
				t.Errorf("a v1.2 table: %+v", r)
			}
			u := smp.Unavailable()
			if len(u) != 8 || u[3].Field != "throttle" || !strings.Contains(u[3].Why, "(v1.2) has no ASIC-independent throttle status") {
				t.Errorf("unavailable %+v", u)
			}
		})
	}
}

// A snapshot (diagnostics, doctor) while the sampler's session is open: both answer.
func TestAMDSMISamplerBesideASnapshot(t *testing.T) {
	opts := withFake(t, fakeAMDSMI(t))
	smp, _ := amdsmiSamplerFor(t, opts)
	if _, err := Snapshot(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if r := smp.Sample(context.Background())[0]; r.Err != nil || r.PowerW == nil {
		t.Fatalf("after a snapshot: %+v", r)
	}
}

// No energy counter; a GPU lost mid-run (AMDSMI_STATUS_NOT_FOUND): each said once.
func TestAMDSMIEnergyMissingAndGPULost(t *testing.T) {
	t.Setenv("FAKE_AMDSMI_ENERGY", "none")
	smp, _ := amdsmiSamplerFor(t, withFake(t, fakeAMDSMI(t)))
	if r := smp.Sample(context.Background())[6]; r.Err != nil || r.EnergyJ != nil || r.PowerW == nil {
		t.Fatalf("before: %+v", r)
	}
	t.Setenv("FAKE_AMDSMI_LOST", "bf")
	for i := 0; i < 100; i++ {
		rs := smp.Sample(context.Background())
		if r := rs[6]; r.Err == nil || !strings.Contains(r.Err.Error(), "AMDSMI_STATUS_NOT_FOUND") || r.PowerW != nil {
			t.Fatalf("lost, sample %d: %+v", i, r)
		}
		if rs[5].Err != nil {
			t.Fatalf("GPU 5: %+v", rs[5])
		}
	}
	count := map[string]int{}
	for _, u := range smp.Unavailable() {
		count[fmt.Sprint(u.GPU, " ", u.Field)]++
		if u.Field == "energy" && !strings.Contains(u.Why, "not supported") {
			t.Errorf("%+v", u)
		}
	}
	if count["6 gpu"] != 1 || count["0 energy"] != 1 || count["6 energy"] != 1 || len(count) != 8+1 {
		t.Errorf("unavailable %v", count)
	}
	for k, n := range count {
		if n != 1 {
			t.Errorf("%s said %d times", k, n)
		}
	}
}

// A library without the telemetry calls: what they give is unavailable, the rest answers.
func TestAMDSMIOlderLibraryTelemetry(t *testing.T) {
	smp, _ := amdsmiSamplerFor(t, withFake(t, fakeAMDSMI(t, "-DFAKE_OMIT_OPTIONAL")))
	r := smp.Sample(context.Background())[0]
	if r.Err != nil || r.PowerW != nil || r.EnergyJ != nil || r.UtilPercent != nil || r.GFXClockMHz == nil || r.MemoryUsedBytes == nil {
		t.Fatalf("%+v", r)
	}
	why := map[string]string{}
	for _, u := range smp.Unavailable() {
		if u.GPU == 0 {
			why[u.Field] = u.Why
		}
	}
	if why["power"] != "the library lacks amdsmi_get_power_info" || why["energy"] != "the library lacks amdsmi_get_energy_count" ||
		why["util"] != "the library lacks amdsmi_get_gpu_activity" || why["throttle"] != "the library lacks amdsmi_get_gpu_metrics_info" {
		t.Errorf("%q", why)
	}
}

// With the library named but unusable, auto falls back to hwmon and says why.
func TestAMDSamplerFallsBackToHwmon(t *testing.T) {
	opts := withFake(t, fakeAMDSMI(t))
	inv, err := Detect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_AMDSMI_FAIL", "init")
	smp, err := OpenSampler(context.Background(), opts, inv)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	u := smp.Unavailable()
	if smp.Source() != "sysfs" || len(u) == 0 || u[0].Field != "source" || !strings.Contains(u[0].Why, "amdsmi_init failed") {
		t.Fatalf("%s %+v", smp.Source(), u)
	}
	if r := smp.Sample(context.Background())[6]; r.PowerW == nil || *r.PowerW != 144 {
		t.Fatalf("%+v", r)
	}
}

// BenchmarkSampleAMDSMI8 is one Sample of the fake library's eight MI300X (26.1.0).
func BenchmarkSampleAMDSMI8(b *testing.B) {
	smp, _ := amdsmiSamplerFor(b, withFake(b, fakeAMDSMI(b)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		smp.Sample(ctx)
	}
}

// A sample while a snapshot holds the library waits for it (within its context) rather
// than failing; a context shorter than the snapshot gives every GPU an error, at once.
func TestAMDSMISampleWaitsForASnapshot(t *testing.T) {
	opts := withFake(t, fakeAMDSMI(t))
	smp, _ := amdsmiSamplerFor(t, opts)
	// The snapshot's amdsmi_init sleeps this long: the fake has no other way to hold the
	// library, so this is the margin between seeing the snapshot take it and sampling.
	t.Setenv("FAKE_AMDSMI_SLEEP_MS", "1000")
	snap := make(chan error, 1)
	go func() { _, err := Snapshot(context.Background(), opts); snap <- err }()
	amdsmiLibs.Lock()
	l := amdsmiLibs.m[opts.AMDSMIPath]
	amdsmiLibs.Unlock()
	for len(l.sem) == 0 { // until the snapshot has taken the library
		select {
		case err := <-snap:
			t.Fatalf("the snapshot ended (%v) before it was seen to take the library", err)
		case <-time.After(time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	r := smp.Sample(ctx)[0]
	cancel()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "no answer") {
		t.Errorf("short context: %+v", r)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	var got Reading
	for got = smp.Sample(ctx)[0]; got.Err != nil && ctx.Err() == nil; got = smp.Sample(ctx)[0] {
		time.Sleep(5 * time.Millisecond) // the first read still waits for the library
	}
	if got.Err != nil || got.PowerW == nil {
		t.Errorf("after the snapshot: %+v", got)
	}
	if err := <-snap; err != nil {
		t.Errorf("snapshot: %v", err)
	}
}

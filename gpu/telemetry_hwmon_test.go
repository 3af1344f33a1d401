package gpu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mi300xHwmon is the MI300X tree's inventory and Options that read its hwmon files.
func mi300xHwmon(t testing.TB, root string) (Options, Inventory) {
	t.Helper()
	opts := Options{Vendor: VendorAMD, SysfsRoot: root, AMDSource: SourceSysfs}
	inv, err := Detect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return opts, inv
}

func TestHwmonSamplerMI300X(t *testing.T) {
	opts, inv := mi300xHwmon(t, filepath.Join(fixtures, "mi300x"))
	opts.AMDSource = "" // auto: a recorded tree is read without the library
	smp, err := OpenSampler(context.Background(), opts, inv)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	if smp.Source() != "sysfs" {
		t.Errorf("source %q", smp.Source())
	}
	rs := smp.Sample(context.Background())
	if len(rs) != 8 {
		t.Fatalf("%d readings", len(rs))
	}
	r := rs[2] // 0000:38:00.0, the busy one
	if r.Err != nil || *r.PowerW != 712 || r.EnergyJ != nil || *r.GFXClockMHz != 2100 || *r.MemClockMHz != 1300 ||
		*r.TemperatureC != 43 || *r.UtilPercent != 97 || *r.MemoryUsedBytes != 12571<<20 || r.ThrottleKnown {
		t.Errorf("GPU 2: %+v", r)
	}
	if r := rs[7]; *r.PowerW != 145 || *r.GFXClockMHz != 132 || *r.UtilPercent != 0 {
		t.Errorf("GPU 7: %+v", r)
	}
	for i := 0; i < 10; i++ {
		smp.Sample(context.Background())
	}
	u := smp.Unavailable()
	// Why the library was not asked, then energy and throttle for each GPU, once.
	if len(u) != 1+8*2 || u[0].GPU != -1 || u[0].Field != "source" || !strings.Contains(u[0].Why, "recorded sysfs tree") {
		t.Fatalf("unavailable %+v", u)
	}
	for _, x := range u[1:] {
		if x.Field != "energy" && x.Field != "throttle" {
			t.Errorf("unexpected %+v", x)
		}
	}
}

// copyTree copies the MI300X tree into a temporary folder the test may change.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(fixtures, "mi300x", "sys"), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dst
}

// A FIFO or a 1 MiB file in place of an attribute is a fact unavailable, never a hang;
// the energy counter where there is one is read in joules; a GPU whose device folder
// goes away is a Reading with Err, said once.
func TestHwmonHostileFiles(t *testing.T) {
	root := copyTree(t)
	dev := filepath.Join(root, "sys", "bus", "pci", "devices")
	hw0 := filepath.Join(dev, "0000:0c:00.0", "hwmon", "hwmon2")
	if err := syscall.Mkfifo(filepath.Join(hw0, "power1_input.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(filepath.Join(hw0, "power1_input")))
	must(t, os.Rename(filepath.Join(hw0, "power1_input.fifo"), filepath.Join(hw0, "power1_input")))
	must(t, os.WriteFile(filepath.Join(hw0, "temp2_input"), []byte(strings.Repeat("4", 1<<20)), 0o644))
	must(t, os.WriteFile(filepath.Join(hw0, "energy1_input"), []byte("123456789\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dev, "0000:22:00.0", "gpu_busy_percent"), []byte("busy\n"), 0o644))

	opts, inv := mi300xHwmon(t, root)
	smp, err := OpenSampler(context.Background(), opts, inv)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // generous: proves "does not hang"
	defer cancel()
	rs := smp.Sample(ctx)
	if r := rs[0]; r.Err != nil || r.PowerW != nil || r.TemperatureC != nil || r.EnergyJ == nil || *r.EnergyJ != 123.456789 || r.GFXClockMHz == nil {
		t.Fatalf("GPU 0: %+v", r)
	}
	if r := rs[1]; r.UtilPercent != nil || r.PowerW == nil {
		t.Fatalf("GPU 1: %+v", r)
	}
	must(t, os.RemoveAll(filepath.Join(dev, "0000:df:00.0")))
	must(t, os.RemoveAll(filepath.Join(dev, "0000:bf:00.0", "hwmon")))         // the driver unbound: its files go,
	must(t, os.Remove(filepath.Join(dev, "0000:bf:00.0", "gpu_busy_percent"))) // the PCI device folder stays
	must(t, os.Remove(filepath.Join(dev, "0000:bf:00.0", "mem_info_vram_used")))
	for i := 0; i < 3; i++ {
		rs = smp.Sample(ctx)
		if r := rs[7]; r.Err == nil || !strings.Contains(r.Err.Error(), "gone") || r.PowerW != nil {
			t.Fatalf("GPU 7 after removal: %+v", r)
		}
		if r := rs[6]; r.Err == nil || !strings.Contains(r.Err.Error(), "attribute files are gone") || r.PowerW != nil {
			t.Fatalf("GPU 6 after its files went: %+v", r)
		}
		if rs[5].Err != nil {
			t.Fatalf("GPU 5: %+v", rs[5])
		}
	}
	why := map[string]string{}
	for _, u := range smp.Unavailable() {
		if u.GPU >= 0 && u.Field != "throttle" && u.Field != "energy" || u.GPU == 0 && u.Field == "energy" {
			if _, dup := why[u.Field+string(rune('0'+u.GPU))]; dup {
				t.Errorf("said twice: %+v", u)
			}
			why[u.Field+string(rune('0'+u.GPU))] = u.Why
		}
	}
	if !strings.Contains(why["power0"], "not a regular file") || !strings.Contains(why["temperature0"], "more than 64 bytes") ||
		!strings.Contains(why["util1"], `not a number: "busy"`) || !strings.Contains(why["gpu7"], "gone") || !strings.Contains(why["gpu6"], "gone") ||
		why["energy0"] != "" || len(why) != 5 {
		t.Errorf("unavailable %q", why)
	}
}

func TestHwmonWithoutAFolder(t *testing.T) {
	opts, inv := mi300xHwmon(t, filepath.Join(fixtures, "mi250x"))
	_, err := OpenSampler(context.Background(), opts, inv)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "GPU 0:") {
		t.Fatalf("%v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSampleHwmon8 is one Sample of the MI300X tree's eight GPUs from hwmon files
// (on tmpfs or the page cache here; real sysfs attributes ask the driver, which may cost more).
func BenchmarkSampleHwmon8(b *testing.B) {
	opts, inv := mi300xHwmon(b, filepath.Join(fixtures, "mi300x"))
	smp, err := OpenSampler(context.Background(), opts, inv)
	if err != nil {
		b.Fatal(err)
	}
	defer smp.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		smp.Sample(ctx)
	}
}

//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeAMDSMI compiles testdata/fake_amdsmi.c with the system C compiler into a fresh
// folder and returns the library's path. Each test loads its own copy: the binding never
// unloads a library, and a copy per test keeps one test's library state from another's.
func fakeAMDSMI(t testing.TB, defines ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("SKIPPED: no C compiler (%s) to build the fake libamd_smi.so: %v", cc, err)
	}
	out := filepath.Join(t.TempDir(), "libamd_smi.so")
	args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", out}, defines...)
	args = append(args, filepath.Join("testdata", "fake_amdsmi.c"))
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, b)
	}
	return out
}

// withFake is Options reading the MI300X fixture tree with the fake library.
func withFake(t testing.TB, lib string) Options {
	return Options{Vendor: VendorAMD, SysfsRoot: filepath.Join(fixtures, "mi300x"), AMDSMIPath: lib}
}

func TestAMDSMIInventoryMI300X(t *testing.T) {
	for _, version := range []string{"26.1.0", "24.6.1"} {
		t.Run(version, func(t *testing.T) {
			t.Setenv("FAKE_AMDSMI_VERSION", version)
			t.Setenv("FAKE_AMDSMI_PARTITION", "CPX")
			lib := fakeAMDSMI(t)
			inv, err := Detect(context.Background(), withFake(t, lib))
			if err != nil {
				t.Fatal(err)
			}
			wantVersion, wantDriver := "26.1.0", "6.12.12"
			if version == "24.6.1" {
				wantVersion, wantDriver = "24.6.1.0", "6.8.5"
			}
			if inv.Source != SourceAMDSMI || inv.Library != "libamd_smi "+wantVersion+" ("+lib+")" || inv.Driver != wantDriver ||
				len(inv.GPUs) != 8 || len(inv.Notes) != 0 {
				t.Fatalf("inventory %+v", inv)
			}
			kfd, err := readKFD(Options{SysfsRoot: filepath.Join(fixtures, "mi300x")})
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range inv.GPUs {
				k := kfd.GPUs[i]
				// Numbered as the KFD topology numbers them, although the fake lists socket 1 first.
				if g.Index != i || g.PCIBusID != k.PCIBusID || g.UUID != k.UUID || g.RenderNode != k.RenderNode ||
					strings.Join(g.Devices, " ") != strings.Join(k.Devices, " ") {
					t.Errorf("GPU %d: %+v, KFD has %+v", i, g, k)
				}
				// 24.6 has no target_graphics_version: the architecture comes from KFD.
				if g.Name != "AMD Instinct MI300X" || g.Arch != "gfx942" || g.MemoryBytes != 196592<<20 { // amd-smi's 196592 MB, not KFD's 192 GiB
					t.Errorf("GPU %d: %q %q %d", i, g.Name, g.Arch, g.MemoryBytes)
				}
				s := g.SMI
				if s == nil || s.ComputePartition != "CPX" || s.MemoryPartition != "NPS1" || s.PowerCapWatts != 750 ||
					s.GFXClockMHz != 132 || s.GFXClockMaxMHz != 2100 || s.MemClockMaxMHz != 1300 || s.TemperatureC == nil ||
					len(s.Firmware) != 4 || s.Firmware[1] != (Firmware{Name: "PSP_SOSDRV", Version: "0x210085"}) || len(s.Unavailable) != 0 {
					t.Fatalf("GPU %d SMI %+v", i, s)
				}
			}
			busy := inv.GPUs[6] // 0000:bf:00.0, the fake's third GPU
			wantProcs := fmt.Sprint([]Process{{PID: 4242, Name: "python3", MemoryBytes: 12 << 30, Container: "bench-r0"},
				{PID: 4343, Name: "rccl-tests", MemoryBytes: 256 << 20}})
			if busy.PCIBusID != "0000:bf:00.0" || fmt.Sprint(busy.SMI.Processes) != wantProcs || busy.SMI.MemoryUsedBytes != 12571<<20 ||
				*busy.SMI.TemperatureC != 43 {
				t.Fatalf("busy GPU %+v %+v", busy, busy.SMI)
			}
			if p := inv.GPUs[0].SMI.Processes; p == nil || len(p) != 0 {
				t.Fatalf("an idle GPU's processes are %#v, want an empty list", p)
			}
		})
	}
}

// The facts that reach MAD_SYSTEM_* and perf.csv's gpu_architecture are the library's.
func TestAMDSMISelectAndArchitecture(t *testing.T) {
	inv, err := Detect(context.Background(), withFake(t, fakeAMDSMI(t)))
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Select(inv, 2, map[string]string{"ROCR_VISIBLE_DEVICES": "6,GPU-3b8a1d6f2c9e4500"})
	if err != nil || len(sel) != 2 || sel[0].PCIBusID != "0000:bf:00.0" || sel[1].Index != 0 || sel[0].Arch != "gfx942" || sel[0].SMI == nil {
		t.Fatalf("Select: %+v %v", sel, err)
	}
}

// A library without an optional entry point (an older AMD SMI) still answers, without
// that fact, and says what it lacks.
func TestAMDSMIMissingOptionalSymbols(t *testing.T) {
	inv, err := Detect(context.Background(), withFake(t, fakeAMDSMI(t, "-DFAKE_OMIT_OPTIONAL")))
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(inv.Notes, "\n")
	if inv.Source != SourceAMDSMI || !strings.Contains(notes, "amdsmi_get_gpu_memory_partition") ||
		!strings.Contains(notes, "amdsmi_get_gpu_process_list") || !strings.Contains(notes, "amdsmi_status_code_to_string") {
		t.Fatalf("source %s, notes:\n%s", inv.Source, notes)
	}
	g := inv.GPUs[0]
	if g.SMI.MemoryPartition != "" || g.SMI.ComputePartition != "SPX" || len(g.SMI.Processes) != 0 || len(g.SMI.Unavailable) != 0 {
		t.Fatalf("SMI %+v", g.SMI)
	}
}

// A library without an entry point benchctl needs is not used: auto falls back to sysfs
// and says which symbol is missing; asking for amdsmi is an error naming it.
func TestAMDSMIMissingRequiredSymbol(t *testing.T) {
	lib := fakeAMDSMI(t, "-DFAKE_OMIT_REQUIRED")
	inv, err := Detect(context.Background(), withFake(t, lib))
	if err != nil {
		t.Fatal(err)
	}
	want := "amdsmi not used: AMD SMI library " + lib + ": lacks amdsmi_get_gpu_vram_usage, which benchctl needs"
	if inv.Source != SourceSysfs || len(inv.Notes) != 1 || inv.Notes[0] != want || len(inv.GPUs) != 8 || inv.GPUs[0].SMI != nil {
		t.Fatalf("source %s, notes %q\nwant %q", inv.Source, inv.Notes, want)
	}
	opts := withFake(t, lib)
	opts.AMDSource = SourceAMDSMI
	var e *AMDSMIError
	if _, err := Detect(context.Background(), opts); !errors.As(err, &e) || !strings.Contains(err.Error(), "amdsmi_get_gpu_vram_usage") {
		t.Fatalf("--source amdsmi: %v", err)
	}
}

// A call failing mid-way: a required one fails the library's inventory (auto falls back
// to sysfs, naming the call, the GPU and the status); an optional one leaves the fact out
// for that GPU only.
func TestAMDSMIFailingCalls(t *testing.T) {
	lib := fakeAMDSMI(t)
	t.Setenv("FAKE_AMDSMI_FAIL", "vram")
	inv, err := Detect(context.Background(), withFake(t, lib))
	if err != nil {
		t.Fatal(err)
	}
	want := "amdsmi not used: AMD SMI library " + lib + ": amdsmi_get_gpu_vram_usage on GPU 3 (0000:df:00.0) failed: " +
		"AMDSMI_STATUS_NO_PERM - Permission Denied (status 10)"
	if inv.Source != SourceSysfs || len(inv.Notes) != 1 || inv.Notes[0] != want {
		t.Fatalf("source %s, notes %q\nwant %q", inv.Source, inv.Notes, want)
	}

	t.Setenv("FAKE_AMDSMI_FAIL", "temp")
	if inv, err = Detect(context.Background(), withFake(t, lib)); err != nil || inv.Source != SourceAMDSMI {
		t.Fatalf("%v %+v", err, inv)
	}
	for _, g := range inv.GPUs {
		failed := g.PCIBusID == "0000:df:00.0"
		if (g.SMI.TemperatureC == nil) != failed || (len(g.SMI.Unavailable) == 1) != failed {
			t.Errorf("GPU %d (%s): temperature %v, unavailable %q", g.Index, g.PCIBusID, g.SMI.TemperatureC, g.SMI.Unavailable)
		}
	}
	if g := inv.GPUs[7]; len(g.SMI.Unavailable) != 1 || g.SMI.Unavailable[0] != "temperature: AMDSMI_STATUS_NO_PERM - Permission Denied (status 10)" {
		t.Errorf("unavailable %q", g.SMI.Unavailable)
	}

	t.Setenv("FAKE_AMDSMI_FAIL", "init")
	opts := withFake(t, lib)
	opts.AMDSource = SourceAMDSMI
	_, err = Detect(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "amdsmi_init failed: AMDSMI_STATUS_INIT_ERROR") {
		t.Fatalf("init: %v", err)
	}
}

// Versions whose structures benchctl does not know are refused before any structure is read.
func TestAMDSMIUnknownVersions(t *testing.T) {
	lib := fakeAMDSMI(t)
	for _, v := range []string{"25.4.2", "27.0.0", "24.7.2.0", "23.4.2.0"} {
		t.Setenv("FAKE_AMDSMI_VERSION", v)
		inv, err := Detect(context.Background(), withFake(t, lib))
		if err != nil || inv.Source != SourceSysfs || len(inv.Notes) != 1 ||
			!strings.Contains(inv.Notes[0], "version "+v+" is not one whose structures benchctl knows") {
			t.Errorf("%s: %v, %s %q", v, err, inv.Source, inv.Notes)
		}
	}
}

func TestAMDSMIAbsentOrNotALibrary(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.so")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.so")
	os.WriteFile(garbage, []byte("not an ELF file"), 0o644)
	cases := map[string]string{
		filepath.Join(dir, "missing.so"): "missing.so does not exist",
		dir:                              "is a directory, not a library",
		fifo:                             "is a named pipe, not a library",
		garbage:                          "dlopen: ",
	}
	for path, want := range cases {
		done := make(chan struct{})
		go func() {
			defer close(done)
			inv, err := Detect(context.Background(), withFake(t, path))
			if err != nil || inv.Source != SourceSysfs || len(inv.Notes) != 1 || !strings.Contains(inv.Notes[0], want) {
				t.Errorf("%s: %v %s %q, want a note with %q", path, err, inv.Source, inv.Notes, want)
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Minute): // does not hang
			t.Fatalf("%s: Detect hangs", path) // a FIFO opened for reading blocks until a writer comes
		}
	}

	// No library anywhere it is looked for: "not found", with where it looked.
	t.Setenv("LD_LIBRARY_PATH", dir)
	t.Setenv("ROCM_PATH", filepath.Join(dir, "rocm"))
	os.Symlink(fifo, filepath.Join(dir, "libamd_smi.so"))
	_, err := findAMDSMI(Options{})
	var nf *NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "libamd_smi.so not found in "+dir+", "+dir+"/rocm/lib, /opt/rocm/lib") ||
		!strings.Contains(err.Error(), "skipped "+dir+"/libamd_smi.so (is a named pipe, not a library)") {
		if _, statErr := os.Stat("/opt/rocm/lib/libamd_smi.so"); statErr == nil {
			t.Skip("this machine has ROCm's libamd_smi.so")
		}
		t.Fatalf("%v", err)
	}
}

// A library that does not answer is left behind: the caller gets an error when its
// context ends, and the next caller waits for it no longer than its own context. Each
// error says so: the context ended while the call was in the library ("no answer"), or
// while it waited for the call still there ("has not returned"); how soon is not asserted.
func TestAMDSMIHungLibrary(t *testing.T) {
	lib := fakeAMDSMI(t)
	t.Setenv("FAKE_AMDSMI_SLEEP_MS", "700")
	opts := withFake(t, lib)
	opts.AMDSource = SourceAMDSMI
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := Detect(ctx, opts)
		cancel()
		// The first call is in the library when its context ends; the second, as a rule,
		// waits for that call (on a machine that kept this test waiting past the library's
		// 700 ms, it is in the library itself).
		if err == nil || !strings.Contains(err.Error(), "(context deadline exceeded)") ||
			!strings.Contains(err.Error(), "no answer") && (i == 0 || !strings.Contains(err.Error(), "an earlier call into the library has not returned")) {
			t.Fatalf("call %d, after %s: %v", i+1, time.Since(start), err)
		}
		t.Logf("call %d ended after %s: %v", i+1, time.Since(start).Round(time.Millisecond), err)
	}
	// The environment stays as it is: the fake, still sleeping, reads it when it wakes.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	if inv, err := Detect(ctx, opts); err != nil || len(inv.GPUs) != 8 {
		t.Fatalf("the library never came back: %v", err)
	}
}

// Many detections at once (go test -race): the library is loaded once and its sessions
// take turns.
func TestAMDSMIConcurrent(t *testing.T) {
	opts := withFake(t, fakeAMDSMI(t))
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			inv, err := Detect(context.Background(), opts)
			if err == nil && (inv.Source != SourceAMDSMI || len(inv.GPUs) != 8) {
				err = fmt.Errorf("%s, %d GPUs, notes %q", inv.Source, len(inv.GPUs), inv.Notes)
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Without the KFD topology (or when it lists other GPUs) the library's order stands and
// the note says so.
func TestAMDSMIWithoutKFD(t *testing.T) {
	opts := Options{Vendor: VendorAMD, SysfsRoot: t.TempDir(), AMDSMIPath: fakeAMDSMI(t)}
	inv, err := Detect(context.Background(), opts)
	if err != nil || inv.Source != SourceAMDSMI || len(inv.Notes) != 1 || !strings.HasPrefix(inv.Notes[0], "GPU indices follow the library's order: ") {
		t.Fatalf("%v %s %q", err, inv.Source, inv.Notes)
	}
	if g := inv.GPUs[0]; g.Index != 0 || g.PCIBusID != "0000:9f:00.0" || g.UUID != "GPU-3b8a1d6f2c9e8944" || g.RenderNode != "" {
		t.Fatalf("%+v", g)
	}
	t.Setenv("FAKE_AMDSMI_GPUS", "0")
	opts.AMDSource = SourceAMDSMI
	if _, err := Detect(context.Background(), opts); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "lists no AMD GPUs") {
		t.Fatalf("no GPUs: %v", err)
	}
}

func TestGfxFromSMI(t *testing.T) {
	for v, want := range map[uint64]string{0x942: "gfx942", 0x90a: "gfx90a", 0x1100: "gfx1100", 0x950: "gfx950", 90402: "gfx942", 0: "", 1<<64 - 1: ""} {
		if got := gfxFromSMI(v); got != want {
			t.Errorf("gfxFromSMI(%#x) = %q, want %q", v, got, want)
		}
	}
	for id, want := range map[uint32]string{1: "SMU", 30: "PSP_SOSDRV", 72: "ASD", 78: "DMCU", 79: "PLDM_BUNDLE", 200: "FW_200"} {
		if got := firmwareName(id); got != want {
			t.Errorf("firmwareName(%d) = %q, want %q", id, got, want)
		}
	}
}

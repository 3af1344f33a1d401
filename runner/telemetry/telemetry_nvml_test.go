//go:build cgo

package telemetry

import (
	"context"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/benchctl/benchctl/gpu"
)

// The sampling loop with the real NVML sampler over go-nvml's DGX H100 mock: the run's
// GPUs are sampled, the others not, and what the mock cannot answer is said once.
func TestSampleDuringARunWithNVML(t *testing.T) {
	synctest.Test(t, sampleDuringARunWithNVML) // the samples' times are the bubble's: as many as asked, on any machine
}

func sampleDuringARunWithNVML(t *testing.T) {
	opts := gpu.WithNVML(gpu.Options{Vendor: gpu.VendorNVIDIA}, dgxh100.New())
	inv, err := gpu.Detect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	sel := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: inv.GPUs}
	open := func(ctx context.Context, inv gpu.Inventory) (gpu.Sampler, error) {
		return gpu.OpenSampler(ctx, opts, inv)
	}
	r, _ := telemetryRun(t, 100*time.Millisecond, open, sel)
	stop := r.sampleDuring(context.Background(), "b", GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: inv.GPUs[2:4]})
	time.Sleep(350 * time.Millisecond)
	stop()
	s := readSummary(t, r, "b")
	if s.Source != gpu.SourceNVML || len(s.GPUs) != 2 || s.GPUs[0].Index != 2 || s.Samples < 2 {
		t.Fatalf("summary: %+v", s)
	}
	seen := map[string]int{}
	for _, u := range s.Unavailable {
		seen[u.Field+"/"+string(rune('0'+u.GPU))]++
		if u.GPU != -1 && u.GPU != 2 && u.GPU != 3 {
			t.Errorf("a note of a GPU the run did not get: %+v", u)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s said %d times", k, n)
		}
	}
	if s.GPUs[0].Samples != s.Samples {
		t.Errorf("GPU 2 answered %d of %d samples", s.GPUs[0].Samples, s.Samples)
	}
}

// BenchmarkSamplingLoopCPU runs the whole sampling loop (ticker, the NVML sampler over the
// DGX H100 mock's 8 GPUs, the series and its file) for 5 s at BENCHCTL_BENCH_INTERVAL
// (default 100ms) and reports the process's CPU time over that span as a share of one core
// (cpu-%): what the sampler costs a node, beyond the driver's own time per call.
func BenchmarkSamplingLoopCPU(b *testing.B) {
	every := 100 * time.Millisecond
	if v := os.Getenv("BENCHCTL_BENCH_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		every = d
	}
	opts := gpu.WithNVML(gpu.Options{Vendor: gpu.VendorNVIDIA}, dgxh100.New())
	inv, err := gpu.Detect(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	sel := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: inv.GPUs}
	open := func(ctx context.Context, inv gpu.Inventory) (gpu.Sampler, error) {
		return gpu.OpenSampler(ctx, opts, inv)
	}
	for b.Loop() {
		r, _ := telemetryRun(b, every, open, sel)
		r.sampleDuring(context.Background(), "warm", sel)() // the library's session opens here, not in the span
		before := cpuTime(b)
		began := time.Now()
		stop := r.sampleDuring(context.Background(), "b", sel)
		time.Sleep(5 * time.Second)
		stop()
		used, span := cpuTime(b)-before, time.Since(began)
		b.ReportMetric(100*used.Seconds()/span.Seconds(), "cpu-%")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

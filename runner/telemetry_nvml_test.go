//go:build cgo

package runner

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/benchctl/benchctl/gpu"
)

// The sampling loop with the real NVML sampler over go-nvml's DGX H100 mock: the run's
// GPUs are sampled, the others not, and what the mock cannot answer is said once.
func TestSampleDuringARunWithNVML(t *testing.T) {
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

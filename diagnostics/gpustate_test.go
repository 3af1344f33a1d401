package diagnostics

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchctl/benchctl/workload/engine"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/gpu"
)

// exited is an engine whose container exited with code 3.
type exited struct{ Engine }

func (exited) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return client.ServerVersionResult{Version: "28.0.1", APIVersion: "1.48"}, nil
}

func (exited) ContainerInspect(context.Context, string, client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{Container: container.InspectResponse{State: &container.State{ExitCode: 3}}}, nil
}

func (exited) ContainerTop(context.Context, string, client.ContainerTopOptions) (client.ContainerTopResult, error) {
	return client.ContainerTopResult{}, errors.New("not running")
}

func TestCaptureTakesTheGPUState(t *testing.T) {
	c := int64(43)
	snapshot := func(context.Context, gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{Vendor: "amd", Source: "amdsmi", Library: "libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so)", GPUs: []gpu.GPU{
			{Index: 0, PCIBusID: "0000:0c:00.0", Name: "AMD Instinct MI300X", MemoryBytes: 196592 << 20,
				SMI: &gpu.SMI{MemoryUsedBytes: 283 << 20, Processes: []gpu.Process{}, Firmware: []gpu.Firmware{{Name: "SMU", Version: "0x556800"}}}},
			{Index: 6, PCIBusID: "0000:bf:00.0", Name: "AMD Instinct MI300X", MemoryBytes: 196592 << 20, SMI: &gpu.SMI{
				MemoryUsedBytes: 12571 << 20, TemperatureC: &c, ProcessesTotal: 3, Unavailable: []string{"power cap: AMDSMI_STATUS_NO_PERM (status 10)"},
				Processes: []gpu.Process{{PID: 4242, Name: "python3", MemoryBytes: 12 << 30, Container: "bench-r0"}, {PID: 4343, Name: "rccl-tests", MemoryBytes: 256 << 20}}}},
		}}, nil
	}
	r := capture(context.Background(), engine.New(exited{}), "c1", "exited with code 3", []string{"boom"}, []string{"0 AMD Instinct MI300X (0000:0c:00.0)"}, nil, snapshot)
	if r.GPUState == nil || len(r.GPUState.GPUs) != 2 || r.GPUState.GPUs[1].Processes[0].PID != 4242 {
		t.Fatalf("gpu state %+v", r.GPUState)
	}
	want := `gpu state (amdsmi, libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so)):
  gpu 0 0000:0c:00.0: 283 MiB of 192.0 GiB used; no processes
  gpu 6 0000:bf:00.0: 12.3 GiB of 192.0 GiB used; 43 °C; pid 4242 python3 (12.0 GiB, container bench-r0); pid 4343 rccl-tests (256 MiB); 1 more processes; unavailable: power cap: AMDSMI_STATUS_NO_PERM (status 10)
`
	if sum := r.Summary(); !strings.Contains(sum, "\n"+want) {
		t.Fatalf("summary:\n%s\nwant it to hold:\n%s", sum, want)
	}

	// No library: no GPU state, and why; no GPUs given: the library is not asked.
	none := func(context.Context, gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{}, fmt.Errorf("%w by a GPU management library (AMD SMI: libamd_smi.so not found; NVML: no driver)", gpu.ErrNotFound)
	}
	r = capture(context.Background(), engine.New(exited{}), "c1", "exited with code 3", nil, []string{"0 NVIDIA H100"}, nil, none)
	if r.GPUState != nil || !strings.Contains(strings.Join(r.NotCaptured, "\n"), "gpu state: no GPUs found by a GPU management library") {
		t.Fatalf("%+v", r)
	}
	asked := false
	r = capture(context.Background(), engine.New(exited{}), "c1", "x", nil, nil, nil, func(context.Context, gpu.Options) (gpu.Inventory, error) {
		asked = true
		return gpu.Inventory{}, nil
	})
	if asked || r.GPUState != nil || r.ExitCode != 3 || r.EngineVersion != "28.0.1 (API 1.48)" {
		t.Fatalf("asked %v, report %+v", asked, r)
	}
}

package doctor

import (
	"context"
	"fmt"
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/runner"
)

func TestDoctorGPUStateChecks(t *testing.T) {
	mi300x := func(i int, bus string, procs ...gpu.Process) gpu.GPU {
		if procs == nil {
			procs = []gpu.Process{}
		}
		return gpu.GPU{Index: i, PCIBusID: bus, Name: "AMD Instinct MI300X", SMI: &gpu.SMI{ComputePartition: "SPX", MemoryPartition: "NPS1", Processes: procs}}
	}
	amd := gpu.Inventory{Vendor: "amd", Source: "amdsmi", Library: "libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so)", GPUs: []gpu.GPU{
		mi300x(0, "0000:0c:00.0"), mi300x(6, "0000:bf:00.0", gpu.Process{PID: 4242, Name: "python3", MemoryBytes: 12 << 30}),
	}}
	snap := func(inv gpu.Inventory, err error) Options {
		return Options{GPUSnapshot: func(_ context.Context, o gpu.Options) (gpu.Inventory, error) {
			if o.Vendor != inv.Vendor && inv.Vendor != "" {
				t.Errorf("snapshot asked for %q", o.Vendor)
			}
			return inv, err
		}}
	}
	cases := []struct {
		name string
		opts Options
		acc  runner.GPUAccess
		want []Check
	}{
		{"busy", snap(amd, nil), runner.GPUAccess{Vendor: "amd", GPUs: amd.GPUs}, []Check{
			{Name: "gpu library", OK: true, Detail: "libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so); compute partition SPX, memory partition NPS1"},
			{Name: "gpus idle", Detail: "GPU 6 (0000:bf:00.0) runs pid 4242 python3 (12.0 GiB)",
				Fix: "wait for those processes to end, or give the job other GPUs (Slurm's allocation, ROCR_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES)"},
		}},
		{"idle", snap(amd, nil), runner.GPUAccess{Vendor: "amd", GPUs: amd.GPUs[:1]}, []Check{
			{Name: "gpu library", OK: true, Detail: "libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so); compute partition SPX, memory partition NPS1"},
			{Name: "gpus idle", OK: true, Detail: "no processes on the 1 selected GPUs"},
		}},
		{"nvml", snap(gpu.Inventory{Vendor: "nvidia", Source: "nvml", Driver: "550.54.15", GPUs: []gpu.GPU{{Index: 0, PCIBusID: "0000:18:00.0", SMI: &gpu.SMI{Processes: []gpu.Process{}}}}}, nil),
			runner.GPUAccess{Vendor: "nvidia", GPUs: []gpu.GPU{{Index: 0, PCIBusID: "0000:18:00.0"}}}, []Check{
				{Name: "gpu library", OK: true, Detail: "nvml, driver 550.54.15"},
				{Name: "gpus idle", OK: true, Detail: "no processes on the 1 selected GPUs"},
			}},
		{"no library", snap(gpu.Inventory{}, &gpu.NotFoundError{Vendor: "amd", Reason: "libamd_smi.so not found in /opt/rocm/lib"}),
			runner.GPUAccess{Vendor: "amd", GPUs: amd.GPUs}, []Check{
				{Name: "gpu library", OK: true, Detail: "none answered (libamd_smi.so not found in /opt/rocm/lib); the GPUs are read without it, " +
					"so there is no memory-in-use, partition or process information, and no busy check"},
			}},
		{"no GPUs", snap(gpu.Inventory{}, fmt.Errorf("not asked")), runner.GPUAccess{Vendor: "none"}, nil},
	}
	for _, c := range cases {
		got := c.opts.gpuStateChecks(context.Background(), c.acc)
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/iostreams"
)

func TestGpusSource(t *testing.T) {
	var asked gpu.Options
	detect := func(_ context.Context, o gpu.Options) (gpu.Inventory, error) {
		asked = o
		return gpu.Inventory{Vendor: "none", GPUs: []gpu.GPU{}}, nil
	}
	for args, want := range map[string]string{"": "auto", "--source amdsmi": "amdsmi", "--source sysfs": "sysfs", "--amd-source amd-smi": "amd-smi", "--amd-source sysfs": "sysfs"} {
		if _, _, err := runGpus(t, detect, strings.Fields(args)...); err != nil || asked.AMDSource != want {
			t.Errorf("%q: %v, AMDSource %q, want %q", args, err, asked.AMDSource, want)
		}
	}
	if _, _, err := runGpus(t, detect, "--source", "rocm-smi"); err == nil || exitCode(err) != exitInvalid ||
		!strings.Contains(err.Error(), `invalid --source "rocm-smi"`) {
		t.Errorf("--source rocm-smi: %v", err)
	}
	cmd := newGpusCmd(iostreams.Streams{}, nil)
	if f := cmd.Flags().Lookup("source"); f == nil || f.Hidden {
		t.Error("--source should be a visible flag")
	}
}

// With the AMD SMI library the table says which library answered and adds its columns.
func TestGpusTableWithTheLibrary(t *testing.T) {
	c := int64(43)
	detect := func(context.Context, gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{Vendor: "amd", Driver: "6.12.12", Runtime: "7.0.2", Source: "amdsmi", Library: "libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so)",
			GPUs: []gpu.GPU{
				{Index: 0, Name: "AMD Instinct MI300X", Arch: "gfx942", MemoryBytes: 196592 << 20, PCIBusID: "0000:0c:00.0", RenderNode: "/dev/dri/renderD128",
					SMI: &gpu.SMI{MemoryUsedBytes: 283 << 20, ComputePartition: "CPX", MemoryPartition: "NPS1", Processes: []gpu.Process{}}},
				{Index: 1, Name: "AMD Instinct MI300X", Arch: "gfx942", MemoryBytes: 196592 << 20, PCIBusID: "0000:22:00.0", RenderNode: "/dev/dri/renderD129",
					SMI: &gpu.SMI{MemoryUsedBytes: 12571 << 20, ComputePartition: "CPX", MemoryPartition: "NPS1", TemperatureC: &c, ProcessesTotal: 70,
						Processes: []gpu.Process{{PID: 4242, Name: "python3"}}}},
			}}, nil
	}
	out, _, err := runGpus(t, detect)
	want := `2 AMD GPUs (source amdsmi, libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so), driver 6.12.12, ROCm 7.0.2)
INDEX  NAME                 ARCH    MEMORY     PCI           RENDER/UUID          USED      PARTITION  TEMP   PROCESSES
0      AMD Instinct MI300X  gfx942  192.0 GiB  0000:0c:00.0  /dev/dri/renderD128  283 MiB   CPX/NPS1   -      0
1      AMD Instinct MI300X  gfx942  192.0 GiB  0000:22:00.0  /dev/dri/renderD129  12.3 GiB  CPX/NPS1   43 °C  70
`
	if err != nil || out != want {
		t.Fatalf("err %v, stdout:\n%s\nwant:\n%s", err, out, want)
	}
}

//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// runGpusNVML runs 'benchctl gpus' against go-nvml's DGX H100 mock, as the real command
// runs (gpu.Detect, then gpu.Snapshot for the state), each GPU with some state set.
func runGpusNVML(t *testing.T, tty bool, args ...string) (string, string, error) {
	t.Helper()
	t.Setenv("SLURM_NTASKS", "")
	t.Setenv("SLURM_STEP_NUM_TASKS", "")
	s := dgxh100.New()
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.UUID = fmt.Sprintf("GPU-6bd4e3c2-0000-4000-8000-00000000000%d", i) // the mock's are random
		dev.MemoryInfo.Used = uint64(i) << 30
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(30 + i), nvml.SUCCESS }
		dev.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(70400 + 80000*i), nvml.SUCCESS }
		dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			if i == 1 {
				return []nvml.ProcessInfo{{Pid: uint32(os.Getpid()), UsedGpuMemory: 1 << 30}, {Pid: 1, UsedGpuMemory: 1 << 20}}, nvml.SUCCESS
			}
			return nil, nvml.SUCCESS
		}
	}
	deps := commands.GPUsDeps{Detect: gpu.Detect, Snapshot: gpu.Snapshot, Now: time.Now, Hostname: os.Hostname, Lookup: os.LookupEnv,
		Options: func(o gpu.Options) gpu.Options { return gpu.WithNVML(o, s) }}
	var out, errb bytes.Buffer
	io := iostreams.New(strings.NewReader(""), &out, &errb)
	io.SetStdoutTTY(tty)
	io.SetStderrTTY(tty)
	cmd := newGpusCmdDeps(io, deps, nil)
	cmd.SetArgs(args)
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// On NVIDIA, gpus shows what it shows on AMD with the library: memory in use, temperature,
// power (drawn/cap) and processes, from NVML; -o json holds them under each GPU's smi.
func TestGpusNVIDIAState(t *testing.T) {
	out, errs, err := runGpusNVML(t, false, "--vendor", "nvidia")
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	if tty, _, _ := runGpusNVML(t, true, "--vendor", "nvidia"); tty != out {
		t.Errorf("on a terminal:\n%s\npiped:\n%s", tty, out)
	}
	want := `8 NVIDIA GPUs (source nvml, driver 550.54.15, CUDA 12.4)
INDEX  NAME                   ARCH   MEMORY  PCI  RENDER/UUID                               USED   TEMP   POWER      PROCESSES
0      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000000  0      30 °C  70/700 W   0
1      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000001  1 GiB  31 °C  150/700 W  2
2      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000002  2 GiB  32 °C  230/700 W  0
3      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000003  3 GiB  33 °C  310/700 W  0
4      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000004  4 GiB  34 °C  390/700 W  0
5      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000005  5 GiB  35 °C  470/700 W  0
6      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000006  6 GiB  36 °C  550/700 W  0
7      NVIDIA H100 80GB HBM3  sm_90  80 GiB  -    GPU-6bd4e3c2-0000-4000-8000-000000000007  7 GiB  37 °C  630/700 W  0
`
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	out, _, err = runGpusNVML(t, false, "-o", "json")
	var inv gpu.Inventory
	if err != nil || json.Unmarshal([]byte(out), &inv) != nil || len(inv.GPUs) != 8 {
		t.Fatalf("json: %v\n%.300s", err, out)
	}
	s := inv.GPUs[1].SMI
	if s == nil || s.MemoryUsedBytes != 1<<30 || *s.TemperatureC != 31 || s.PowerWatts != 150.4 || s.PowerCapWatts != 700 || len(s.Processes) != 2 {
		t.Errorf("GPU 1 smi %+v", s)
	}
}

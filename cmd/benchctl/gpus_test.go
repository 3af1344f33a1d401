package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/iostreams"
)

const gpuFixtures = "../../tests/fixtures/sysfs/"

// runGpus runs 'benchctl gpus' with detect (nil: the real gpu.Detect) and returns stdout, stderr and its error.
func runGpus(t *testing.T, detect commands.DetectGPUs, args ...string) (string, string, error) {
	t.Helper()
	if detect == nil {
		detect = gpu.Detect
	}
	var out, errb bytes.Buffer
	cmd := newGpusCmdWith(iostreams.New(strings.NewReader(""), &out, &errb), detect)
	cmd.SetArgs(args)
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestGpusTableMI300X(t *testing.T) {
	out, errs, err := runGpus(t, nil, "--vendor", "amd", "--sysfs-root", gpuFixtures+"mi300x")
	if err != nil || errs != "" {
		t.Fatalf("err %v, stderr %q", err, errs)
	}
	want := `8 AMD GPUs (source sysfs)
INDEX  NAME                 ARCH    MEMORY   PCI           RENDER/UUID
0      AMD Instinct MI300X  gfx942  192 GiB  0000:0c:00.0  /dev/dri/renderD128
1      AMD Instinct MI300X  gfx942  192 GiB  0000:22:00.0  /dev/dri/renderD129
2      AMD Instinct MI300X  gfx942  192 GiB  0000:38:00.0  /dev/dri/renderD130
3      AMD Instinct MI300X  gfx942  192 GiB  0000:5c:00.0  /dev/dri/renderD131
4      AMD Instinct MI300X  gfx942  192 GiB  0000:9f:00.0  /dev/dri/renderD132
5      AMD Instinct MI300X  gfx942  192 GiB  0000:af:00.0  /dev/dri/renderD133
6      AMD Instinct MI300X  gfx942  192 GiB  0000:bf:00.0  /dev/dri/renderD135
7      AMD Instinct MI300X  gfx942  192 GiB  0000:df:00.0  /dev/dri/renderD134
`
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
}

func TestGpusJSONMI250X(t *testing.T) {
	out, _, err := runGpus(t, nil, "--vendor", "amd", "--sysfs-root", gpuFixtures+"mi250x", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var inv gpu.Inventory
	if err := json.Unmarshal([]byte(out), &inv); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if inv.Vendor != "amd" || inv.Source != "sysfs" || len(inv.GPUs) != 8 || inv.GPUs[7].Arch != "gfx90a" || inv.GPUs[7].RenderNode != "/dev/dri/renderD135" {
		t.Fatalf("%+v", inv)
	}
	for _, key := range []string{`"memoryBytes": 68719476736`, `"pciBusId": "0000:c1:00.0"`, `"renderNode"`, `"numaNode": -1`, `"devices": [`} {
		if !strings.Contains(out, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestGpusNVIDIATable(t *testing.T) {
	detect := func(context.Context, gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{Vendor: "nvidia", Driver: "550.54.15", Runtime: "12.4", Source: "nvml", GPUs: []gpu.GPU{
			{Index: 0, UUID: "GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a70", Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 81559 << 20, PCIBusID: "0000:18:00.0", Arch: "sm_90"},
		}}, nil
	}
	out, _, err := runGpus(t, detect)
	want := `1 NVIDIA GPU (source nvml, driver 550.54.15, CUDA 12.4)
INDEX  NAME                   ARCH   MEMORY    PCI           RENDER/UUID
0      NVIDIA H100 80GB HBM3  sm_90  79.6 GiB  0000:18:00.0  GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a70
`
	if err != nil || out != want {
		t.Fatalf("err %v, stdout:\n%s\nwant:\n%s", err, out, want)
	}
}

func TestGpusNoneFound(t *testing.T) {
	var asked gpu.Options
	none := func(_ context.Context, o gpu.Options) (gpu.Inventory, error) {
		asked = o
		return gpu.Inventory{Vendor: "none", GPUs: []gpu.GPU{}}, nil
	}
	out, errs, err := runGpus(t, none)
	if err != nil || out != "" || errs != "no GPUs found\n" {
		t.Fatalf("err %v, stdout %q, stderr %q", err, out, errs)
	}
	if asked.Vendor != "auto" || asked.SysfsRoot != "/" || asked.AMDSource != "auto" {
		t.Errorf("detect got %+v", asked)
	}
	out, errs, err = runGpus(t, none, "-o", "json")
	if err != nil || errs != "no GPUs found\n" || !strings.Contains(out, `"vendor": "none"`) || !strings.Contains(out, `"gpus": []`) {
		t.Fatalf("--json: err %v, stdout %q, stderr %q", err, out, errs)
	}
}

func TestGpusErrors(t *testing.T) {
	missing := func(_ context.Context, o gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{}, &gpu.NotFoundError{Vendor: o.Vendor, Reason: "nvidia-smi is not on PATH"}
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--vendor", "intel"}, exitInvalid, `invalid --vendor "intel"`},
		{[]string{"--amd-source", "rocm-smi"}, exitInvalid, `invalid --amd-source "rocm-smi"`},
		{[]string{"--vendor", "nvidia"}, exitInvalid, "no NVIDIA GPUs found on this node: nvidia-smi is not on PATH"},
	}
	for _, c := range cases {
		out, _, err := runGpus(t, missing, c.args...)
		if err == nil || exitCode(err) != c.code || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("%v: err %v (exit %d), stdout %q; want exit %d and %q", c.args, err, exitCode(err), out, c.code, c.want)
		}
	}
}

func TestGpusHelp(t *testing.T) {
	cmd := newGpusCmd(iostreams.New(nil, &bytes.Buffer{}, &bytes.Buffer{}), nil)
	if cmd.Short == "" || cmd.Long == "" || cmd.Example == "" || cmd.Name() != "gpus" {
		t.Fatalf("gpus needs Short, Long and Example")
	}
	for _, hidden := range []string{"sysfs-root", "amd-source"} {
		if f := cmd.Flags().Lookup(hidden); f == nil || !f.Hidden {
			t.Errorf("--%s should exist and be hidden", hidden)
		}
	}
}

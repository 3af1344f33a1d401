package gpu

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// dgxH100SMI is what the nvidiaSMIArgs query prints on a DGX H100 (driver 550.54.15), in
// nvidia-smi's format: ", " between fields, memory.total in MiB, 8-digit PCI domain.
const dgxH100SMI = `0, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a70, NVIDIA H100 80GB HBM3, 81559, 00000000:18:00.0, 550.54.15
1, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a71, NVIDIA H100 80GB HBM3, 81559, 00000000:2A:00.0, 550.54.15
2, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a72, NVIDIA H100 80GB HBM3, 81559, 00000000:3A:00.0, 550.54.15
3, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a73, NVIDIA H100 80GB HBM3, 81559, 00000000:5D:00.0, 550.54.15
4, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a74, NVIDIA H100 80GB HBM3, 81559, 00000000:9A:00.0, 550.54.15
5, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a75, NVIDIA H100 80GB HBM3, 81559, 00000000:AB:00.0, 550.54.15
6, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a76, NVIDIA H100 80GB HBM3, 81559, 00000000:BA:00.0, 550.54.15
7, GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a77, NVIDIA H100 80GB HBM3, 81559, 00000000:DB:00.0, 550.54.15
`

func TestParseNvidiaSMI(t *testing.T) {
	gpus, driver, err := parseNvidiaSMI([]byte(dgxH100SMI))
	if err != nil {
		t.Fatal(err)
	}
	if driver != "550.54.15" || len(gpus) != 8 {
		t.Fatalf("driver %q, %d GPUs", driver, len(gpus))
	}
	want := GPU{Index: 5, UUID: "GPU-4f3e1b0a-7c2d-4e8f-9a1b-2c3d4e5f6a75", Name: "NVIDIA H100 80GB HBM3",
		MemoryBytes: 81559 << 20, PCIBusID: "0000:ab:00.0", NUMANode: -1}
	if !reflect.DeepEqual(gpus[5], want) {
		t.Fatalf("\n got %+v\nwant %+v", gpus[5], want)
	}

	gpus, _, err = parseNvidiaSMI([]byte("0, GPU-x, NVIDIA A100-SXM4-40GB, [N/A], 00000000:07:00.0, 535.104.05\n"))
	if err != nil || gpus[0].MemoryBytes != 0 {
		t.Fatalf("[N/A] memory: %+v %v", gpus, err)
	}
	if gpus, _, err = parseNvidiaSMI(nil); err != nil || gpus == nil || len(gpus) != 0 {
		t.Fatalf("no output: %v %v", gpus, err)
	}
	for in, want := range map[string]string{
		"0, GPU-x, H100, 81559, 00000000:18:00.0\n":             "wrong number of fields",
		"x, GPU-x, H100, 81559, 00000000:18:00.0, 550.54.15\n":  `line 1: index "x" is not a number`,
		"0, GPU-x, H100, 80 GiB, 00000000:18:00.0, 550.54.15\n": `line 1: memory.total "80 GiB"`,
	} {
		if _, _, err := parseNvidiaSMI([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

func fakeRun(out string, err error, got *[]string) runFunc {
	return func(_ context.Context, name string, args ...string) ([]byte, error) {
		*got = append([]string{name}, args...)
		return []byte(out), err
	}
}

func TestFromNvidiaSMI(t *testing.T) {
	var argv []string
	root := writeTree(t, map[string]string{
		"proc/driver/nvidia/gpus/0000:18:00.0/information": "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 17\nDevice Minor: \t 4\n",
		"sys/bus/pci/devices/0000:18:00.0/numa_node":       "0\n",
	})
	inv, err := fromNvidiaSMI(context.Background(), Options{SysfsRoot: root, run: fakeRun(dgxH100SMI, nil, &argv)})
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := []string{"nvidia-smi", "--query-gpu=index,uuid,name,memory.total,pci.bus_id,driver_version", "--format=csv,noheader,nounits"}
	if !reflect.DeepEqual(argv, wantArgv) {
		t.Errorf("ran %q, want %q", argv, wantArgv)
	}
	if inv.Vendor != VendorNVIDIA || inv.Source != SourceNvidiaSMI || inv.Driver != "550.54.15" || inv.Runtime != "" || len(inv.GPUs) != 8 {
		t.Fatalf("%+v", inv)
	}
	if g := inv.GPUs[0]; g.NUMANode != 0 || strings.Join(g.Devices, " ") != "/dev/nvidia4 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools" {
		t.Errorf("GPU 0 (minor and NUMA node from /proc and /sys): %+v", g)
	}
	if g := inv.GPUs[1]; g.NUMANode != -1 || g.Devices[0] != "/dev/nvidiactl" {
		t.Errorf("GPU 1 (nothing in /proc or /sys): %+v", g)
	}

	failed := exec.Command("false").Run() // a real *exec.ExitError
	cases := []struct {
		name, out string
		err       error
		notFound  bool
		want      string
	}{
		{"not installed", "", exec.ErrNotFound, true, "nvidia-smi is not on PATH"},
		{"no driver", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
			failed, true, "couldn't communicate with the NVIDIA driver"},
		{"no devices", "No devices were found\n", failed, true, "No devices were found"},
		{"other failure", "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error\n", failed, false, "nvidia-smi: exit status 1: Unable to determine"},
		{"bad output", "garbage\n", nil, false, "wrong number of fields"},
	}
	for _, c := range cases {
		_, err := fromNvidiaSMI(context.Background(), Options{run: fakeRun(c.out, c.err, &argv)})
		if err == nil || errors.Is(err, ErrNotFound) != c.notFound || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want notFound=%v containing %q", c.name, err, c.notFound, c.want)
		}
	}
}

package gpu

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// nvidiaSMIArgs is the one nvidia-smi query the fallback runs.
var nvidiaSMIArgs = []string{
	"--query-gpu=index,uuid,name,memory.total,pci.bus_id,driver_version",
	"--format=csv,noheader,nounits",
}

// fromNvidiaSMI is the NVIDIA inventory from nvidia-smi's CSV (the CGO_ENABLED=0 path).
// It has no CUDA version and no compute capability (the query does not ask for them);
// device minors come from /proc/driver/nvidia/gpus/<pci>/information when readable.
func fromNvidiaSMI(ctx context.Context, opts Options) (Inventory, error) {
	out, err := opts.runner()(ctx, "nvidia-smi", nvidiaSMIArgs...)
	if errors.Is(err, exec.ErrNotFound) {
		return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "nvidia-smi is not on PATH"}
	}
	if err != nil {
		msg := string(out)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = string(ee.Stderr) + msg
		}
		if strings.Contains(msg, "couldn't communicate with the NVIDIA driver") || strings.Contains(msg, "No devices were found") {
			return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "nvidia-smi: " + firstLine(msg)}
		}
		if line := firstLine(msg); line != "" {
			return Inventory{}, fmt.Errorf("nvidia-smi: %w: %s", err, line)
		}
		return Inventory{}, fmt.Errorf("nvidia-smi: %w", err)
	}
	gpus, driver, err := parseNvidiaSMI(out)
	if err != nil {
		return Inventory{}, err
	}
	if len(gpus) == 0 {
		return Inventory{}, &NotFoundError{Vendor: VendorNVIDIA, Reason: "nvidia-smi lists no GPUs"}
	}
	for i := range gpus {
		g := &gpus[i]
		g.NUMANode = numaNode(opts, g.PCIBusID)
		g.Devices = nvidiaDevices(procMinor(opts, g.PCIBusID))
	}
	return Inventory{Vendor: VendorNVIDIA, GPUs: gpus, Driver: driver, Source: SourceNvidiaSMI}, nil
}

// parseNvidiaSMI reads the CSV of nvidiaSMIArgs: one GPU per line, memory in MiB, the
// driver version repeated on every line. "[N/A]" memory reads as 0.
func parseNvidiaSMI(out []byte) ([]GPU, string, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = 6
	gpus := []GPU{}
	driver := ""
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("nvidia-smi output: %w", err)
		}
		line, _ := r.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		idx, err := strconv.Atoi(rec[0])
		if err != nil {
			return nil, "", fmt.Errorf("nvidia-smi output line %d: index %q is not a number", line, rec[0])
		}
		var mem uint64
		if mib, err := strconv.ParseUint(rec[3], 10, 64); err == nil {
			mem = mib << 20
		} else if !strings.HasPrefix(rec[3], "[") { // [N/A], [Not Supported]
			return nil, "", fmt.Errorf("nvidia-smi output line %d: memory.total %q is not a number of MiB", line, rec[3])
		}
		gpus = append(gpus, GPU{Index: idx, UUID: rec[1], Name: rec[2], MemoryBytes: mem, PCIBusID: normalizePCI(rec[4]), NUMANode: -1})
		if driver == "" {
			driver = rec[5]
		}
	}
	return gpus, driver, nil
}

// procMinor reads "Device Minor: N" from /proc/driver/nvidia/gpus/<pci>/information; -1 if
// it cannot.
func procMinor(opts Options, pci string) int {
	if pci == "" {
		return -1
	}
	b, err := readFile(opts, "proc", "driver", "nvidia", "gpus", pci, "information")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "Device Minor" {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// nvidiaDevices are the device files a container needs for NVIDIA GPU minor (or only the
// shared ones when the minor is unknown, -1). The NVIDIA container runtime adds them itself
// when it is used; they are listed for runtimes that take device files.
func nvidiaDevices(minor int) []string {
	devs := []string{}
	if minor >= 0 {
		devs = append(devs, "/dev/nvidia"+strconv.Itoa(minor))
	}
	return append(devs, "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

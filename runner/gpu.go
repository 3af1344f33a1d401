package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/manifest"
)

// GPUError is a GPU request this node cannot satisfy (invalid input for this node).
type GPUError struct {
	Msg string
	// Absent: the node has none of the manifest's GPUs (none found, or the vendor's library
	// is missing), as on a login node; else the node has GPUs and the request does not fit
	// them (too many asked, a visibility variable naming others).
	Absent bool
}

func (e *GPUError) Error() string      { return e.Msg }
func (e *GPUError) InvalidInput() bool { return true }

// visibilityVars are the variables gpu.Select reads to follow the allocation.
var visibilityVars = []string{"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}

// SelectGPUs decides which GPUs a container gets, before any container starts, from the
// node's inventory (package gpu: vendor auto-detected or as the manifest says) and the
// allocation (Slurm's GPU variables, else the visibility variables) and gpu.count. More
// GPUs than the node has is an error.
// sysfsRoot, when not "", is the root /sys, /proc and /opt/rocm are read under (a recorded
// tree: the hidden run --sysfs-root).
func SelectGPUs(g manifest.GPU, lookup func(string) (string, bool), sysfsRoot string) (GPUAccess, error) {
	return selectGPUs(g, lookup, gpu.Options{SysfsRoot: sysfsRoot}, "/etc/group")
}

func selectGPUs(g manifest.GPU, lookup func(string) (string, bool), opts gpu.Options, groupFile string) (GPUAccess, error) {
	return selectGPUsOn(g, lookup, gpuHost{opts: opts, groupFile: groupFile})
}

func selectGPUsOn(g manifest.GPU, lookup func(string) (string, bool), h gpuHost) (GPUAccess, error) {
	opts := h.opts
	if g.Vendor == manifest.VendorNone {
		return GPUAccess{Vendor: manifest.VendorNone}, nil
	}
	opts.Vendor = g.Vendor
	inv, err := gpu.Detect(context.Background(), opts)
	if err != nil {
		return GPUAccess{}, &GPUError{Msg: "gpu.vendor " + g.Vendor + ": " + err.Error(), Absent: errors.Is(err, gpu.ErrNotFound)}
	}
	acc := GPUAccess{Vendor: inv.Vendor, System: inv.GPUs, Runtime: inv.Runtime}
	if inv.Vendor == gpu.VendorNone {
		if g.Count > 0 {
			// "all" of none is fine (a CPU benchmark); a number of GPUs that are not there is not.
			return acc, &GPUError{Msg: fmt.Sprintf("gpu.count asks for %d GPUs per node but this node has none (gpu.vendor %s found no AMD or NVIDIA GPU); "+
				"run on GPU nodes, or set gpu.count: all or gpu.vendor: none to run without GPUs", int(g.Count), g.Vendor), Absent: true}
		}
		return acc, nil
	}
	env := map[string]string{}
	for _, k := range visibilityVars {
		if v, ok := lookup(k); ok {
			env[k] = v
		}
	}
	sel, err := gpu.Select(inv, int(g.Count), env)
	if err != nil {
		return acc, &GPUError{Msg: err.Error()}
	}
	acc.host = h
	return access(acc, sel)
}

// access gives acc the selected GPUs sel: the devices and visibility variables for them.
// NVIDIA GPUs get the NVIDIA device request here; ForEngine turns it into CDI devices
// where the engine takes them.
func access(acc GPUAccess, sel []gpu.GPU) (GPUAccess, error) {
	ids := make([]string, len(sel))
	for i, s := range sel {
		ids[i] = strconv.Itoa(s.Index)
	}
	acc.GPUs, acc.Devices, acc.GroupAdd, acc.Requests, acc.Env = sel, nil, nil, nil, nil
	switch acc.Vendor {
	case gpu.VendorAMD:
		// /dev/kfd and the selected GPUs' render nodes only; ROCR_VISIBLE_DEVICES numbers them
		// as the KFD topology does (ROCm in the container sees only these render nodes, and
		// the variable keeps the job's view of the indices).
		if !acc.planned {
			var err error
			if acc.Devices, acc.GroupAdd, err = acc.host.amdDevices(sel); err != nil {
				return acc, err
			}
		} else {
			acc.Devices = []manifest.Device{{Host: "/dev/kfd", Container: "/dev/kfd", Permissions: "rwm"}}
		}
		acc.Env = []manifest.EnvVar{{Name: "ROCR_VISIBLE_DEVICES", Value: strings.Join(ids, ",")}}
	case gpu.VendorNVIDIA:
		devIDs := make([]string, len(sel))
		for i, s := range sel {
			devIDs[i] = nvidiaID(s)
		}
		acc.Requests = []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: devIDs, Capabilities: [][]string{{"gpu"}}}}
		acc.Env = []manifest.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: strings.Join(devIDs, ",")}}
	}
	return acc, nil
}

// Take is the access to the first n of the selected GPUs (n < 0: all of them), for a
// model whose n_gpus asks for fewer than the job's; more than there are is a *GPUError.
func (a GPUAccess) Take(n int, who string) (GPUAccess, error) {
	if n < 0 || a.Vendor == manifest.VendorNone || a.Vendor == "" || n == len(a.GPUs) {
		if n > 0 && (a.Vendor == manifest.VendorNone || a.Vendor == "") {
			return a, &GPUError{Msg: fmt.Sprintf("%s needs %d GPUs (n_gpus) but this node gives the job none (gpu.vendor %s)", who, n, a.Vendor)}
		}
		return a, nil
	}
	if n > len(a.GPUs) {
		return a, &GPUError{Msg: fmt.Sprintf("%s needs %d GPUs (n_gpus) but this node gives the job %d of its %d; lower n_gpus, or raise gpu.count", who, n, len(a.GPUs), len(a.System))}
	}
	return access(a, a.GPUs[:n])
}

// Describe lists the GPUs for messages and diagnostics.
func (a GPUAccess) Describe() []string {
	if a.Vendor == manifest.VendorNone || a.Vendor == "" {
		return nil
	}
	var out []string
	for _, g := range a.GPUs {
		d := strconv.Itoa(g.Index) + " " + g.Name
		if g.PCIBusID != "" {
			d += " (" + g.PCIBusID + ")"
		}
		out = append(out, d)
	}
	for _, e := range a.Env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

// groupID finds a group's numeric id (containers need numbers: the image may lack the names).
func groupID(groupFile, name string) (string, bool) {
	f, err := os.Open(groupFile)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), ":")
		if len(parts) >= 3 && parts[0] == name {
			return parts[2], true
		}
	}
	return "", false
}

package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/runner/gpupath"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
)

// GPUError is a GPU request this node cannot satisfy (invalid input for this node).
type GPUError = gpupath.GPUError

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
	acc.GPUs, acc.Devices, acc.GroupAdd, acc.Requests, acc.Env = sel, nil, nil, nil, nil
	switch acc.Vendor {
	case gpu.VendorAMD:
		// /dev/kfd and the selected GPUs' render nodes only. ROCm's thunk leaves out every
		// GPU whose render node it cannot open, so the container numbers its GPUs 0..k-1 in
		// KFD order, whichever host GPUs they are: ROCR_VISIBLE_DEVICES says that (the host's
		// indices, 4,5,6,7 for Slurm's GPUs 4-7, would match none of them).
		if !acc.planned {
			var err error
			if acc.Devices, acc.GroupAdd, err = acc.host.amdDevices(sel); err != nil {
				return acc, err
			}
		} else {
			acc.Devices = []manifest.Device{{Host: "/dev/kfd", Container: "/dev/kfd", Permissions: "rwm"}}
		}
		acc.Env = []manifest.EnvVar{{Name: "ROCR_VISIBLE_DEVICES", Value: containerIndices(len(sel))}}
	case gpu.VendorNVIDIA:
		devIDs := make([]string, len(sel))
		for i, s := range sel {
			devIDs[i] = gpupath.NVIDIAID(s)
		}
		acc.Requests = []workload.GPURequest{{Driver: "nvidia", DeviceIDs: devIDs, Capabilities: [][]string{{"gpu"}}}}
		// NVIDIA_VISIBLE_DEVICES is the NVIDIA Container Toolkit's input and names host GPUs,
		// as the device request and the CDI devices do; benchctl sets no CUDA_VISIBLE_DEVICES:
		// the container's CUDA counts the GPUs it has from 0.
		acc.Env = []manifest.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: strings.Join(devIDs, ",")}}
	}
	return acc, nil
}

// containerIndices is "0,1,...,n-1": the GPUs as a container given n of them numbers them.
func containerIndices(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return strings.Join(ids, ",")
}

// hostNumbered are the variables that count a node's GPUs as its host does (Slurm sets
// them so without device cgroups): a container numbers the GPUs it gets from 0, so passEnv
// never passes these to a container that benchctl gives GPUs; gpu.Env sets what it needs.
var hostNumbered = []string{"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "NVIDIA_VISIBLE_DEVICES"}

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

package gpu

import (
	"context"
	"errors"
	"fmt"
)

// SMI is what a GPU management library says about a GPU beyond its identity: how it is
// set up (partitions, power cap, firmware) and what it is doing now (memory in use,
// clocks, temperature, processes). Zero values are facts the library did not give.
type SMI struct {
	MemoryUsedBytes  uint64     `json:"memoryUsedBytes"`
	ComputePartition string     `json:"computePartition,omitempty"` // AMD: SPX, DPX, QPX, CPX
	MemoryPartition  string     `json:"memoryPartition,omitempty"`  // AMD: NPS1, NPS2, NPS4, NPS8
	PowerCapWatts    float64    `json:"powerCapWatts,omitempty"`
	PowerWatts       float64    `json:"powerWatts,omitempty"` // drawn now (NVIDIA)
	GFXClockMHz      uint32     `json:"gfxClockMHz,omitempty"`
	GFXClockMaxMHz   uint32     `json:"gfxClockMaxMHz,omitempty"`
	MemClockMHz      uint32     `json:"memClockMHz,omitempty"`
	MemClockMaxMHz   uint32     `json:"memClockMaxMHz,omitempty"`
	TemperatureC     *int64     `json:"temperatureC,omitempty"` // AMD: hotspot (junction), else edge; NVIDIA: the GPU sensor
	Firmware         []Firmware `json:"firmware,omitempty"`
	Links            []Link     `json:"links,omitempty"` // NVIDIA: active NVLinks, per peer
	Processes        []Process  `json:"processes"`       // processes using the GPU now
	// ProcessesTotal is how many processes the GPU has when more than Processes lists.
	ProcessesTotal int      `json:"processesTotal,omitempty"`
	Unavailable    []string `json:"unavailable,omitempty"` // facts the library failed to give for this GPU, and why
}

// Firmware is one firmware block and its version as the library reports it.
type Firmware struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Link is a GPU's direct links to one peer: another GPU of the node (its Index), or -1 for a
// switch (NVSwitch on HGX/DGX boards).
type Link struct {
	Peer  int    `json:"peer"`
	Type  string `json:"type"` // NVLink, NVLink (switch)
	Count int    `json:"count"`
}

// Process is a process using a GPU.
type Process struct {
	PID         uint32 `json:"pid"`
	Name        string `json:"name"`
	MemoryBytes uint64 `json:"memoryBytes"`         // device memory it holds
	Container   string `json:"container,omitempty"` // AMD: the container it runs in, when the library knows
}

// Snapshot asks the node's GPU management library what its GPUs are doing now: memory in
// use, temperature, clocks and processes, for a failed benchmark's diagnostics and
// doctor's "GPU busy" check. It asks AMD SMI for AMD GPUs and NVML for NVIDIA ones
// (opts.Vendor; auto tries AMD first). Without a library there is no snapshot: an error
// that errors.Is(err, ErrNotFound), never a crash. Sysfs and the CLIs are not used: they
// know nothing of processes.
func Snapshot(ctx context.Context, opts Options) (Inventory, error) {
	nvidia := snapshotNVIDIA // nvidia_nvml.go (cgo) or nvidia_nocgo.go
	if opts.nvidiaState != nil {
		nvidia = opts.nvidiaState
	}
	switch opts.Vendor {
	case VendorAMD:
		return readAMDSMI(ctx, opts)
	case VendorNVIDIA:
		return nvidia(ctx, opts)
	case VendorAuto, "":
	default:
		return Inventory{}, fmt.Errorf("unknown GPU vendor %q (want auto, amd or nvidia)", opts.Vendor)
	}
	inv, amdErr := readAMDSMI(ctx, opts)
	if amdErr == nil {
		return inv, nil
	}
	inv, nvErr := nvidia(ctx, opts)
	if nvErr == nil {
		return inv, nil
	}
	err := fmt.Errorf("AMD SMI: %s; NVML: %s", reason(amdErr), reason(nvErr))
	if errors.Is(amdErr, ErrNotFound) && errors.Is(nvErr, ErrNotFound) {
		return Inventory{}, fmt.Errorf("%w by a GPU management library (%w)", ErrNotFound, err)
	}
	return Inventory{}, err
}

package gpu

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Vendors. "auto" is only a request; an Inventory's Vendor is amd, nvidia or none.
const (
	VendorAuto   = "auto"
	VendorAMD    = "amd"
	VendorNVIDIA = "nvidia"
	VendorNone   = "none"
)

// Sources an Inventory can come from.
const (
	SourceNVML      = "nvml"       // go-nvml (cgo builds)
	SourceNvidiaSMI = "nvidia-smi" // nvidia-smi CSV (CGO_ENABLED=0 builds)
	SourceAMDSMI    = "amdsmi"     // libamd_smi, loaded at run time (AMD, first choice)
	SourceSysfs     = "sysfs"      // KFD topology in sysfs (AMD, without the library)
	SourceAMDSMICLI = "amd-smi"    // amd-smi --json (AMD, without the library and sysfs)
	SourceAuto      = "auto"       // a request only: for AMD the library, else sysfs, else the CLI
)

// Inventory is what one node has from one vendor.
type Inventory struct {
	Vendor  string `json:"vendor"`            // amd, nvidia or none
	GPUs    []GPU  `json:"gpus"`              // in the vendor's enumeration order (the order its runtime numbers them)
	Driver  string `json:"driver"`            // kernel driver version, "" if unknown
	Runtime string `json:"runtime"`           // CUDA driver API version (e.g. 12.4) or ROCm version (e.g. 6.2.0), "" if unknown
	Source  string `json:"source"`            // one of the Source constants; "" for vendor none
	Library string `json:"library,omitempty"` // the management library that answered: "libamd_smi 26.1.0 (/opt/rocm/lib/libamd_smi.so)"
	// Notes say why a preferred source was not used ("amdsmi not used: ...") and which
	// facts the source that answered could not give. Empty when there is nothing to say.
	Notes []string `json:"notes,omitempty"`
}

// GPU is one device as the vendor runtime numbers it.
type GPU struct {
	Index       int      `json:"index"`         // what CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES count (NVML index; KFD GPU-node order)
	UUID        string   `json:"uuid"`          // GPU-... as the visibility variables accept it; "" if unknown
	Name        string   `json:"name"`          // marketing name
	MemoryBytes uint64   `json:"memoryBytes"`   // device memory (VRAM / HBM)
	PCIBusID    string   `json:"pciBusId"`      // dddd:bb:dd.f, lower case, 4-digit domain (the sysfs form)
	Arch        string   `json:"arch"`          // gfx942, sm_90, ...; "" if unknown
	RenderNode  string   `json:"renderNode"`    // AMD: /dev/dri/renderD<N>; "" on NVIDIA
	Devices     []string `json:"devices"`       // host device files a container needs for this GPU
	NUMANode    int      `json:"numaNode"`      // NUMA node of the PCI device; -1 if unknown
	SMI         *SMI     `json:"smi,omitempty"` // what a management library adds (AMD SMI, NVML); nil without one
}

// Options say where to look.
type Options struct {
	Vendor    string // auto (or ""), amd or nvidia
	SysfsRoot string // the root /sys, /proc and /opt/rocm are read under; "" means "/"
	AMDSource string // auto (or ""), amdsmi, sysfs or amd-smi: see detectAMD
	// AMDSMIPath is the libamd_smi.so to load; "" searches LD_LIBRARY_PATH, $ROCM_PATH/lib,
	// /opt/rocm/lib and the system library folders (amdsmi_load.go).
	AMDSMIPath string

	// For tests; nil means the real thing.
	run         runFunc                                           // runs a command (nvidia-smi, amd-smi)
	nvidia      func(context.Context, Options) (Inventory, error) // the NVIDIA probe (NVML or nvidia-smi by build)
	nvidiaState func(context.Context, Options) (Inventory, error) // the NVIDIA snapshot (NVML)
	// nvidiaSampler opens the NVIDIA telemetry (NVML) for OpenSampler.
	nvidiaSampler func(context.Context, Options, Inventory) (Sampler, error)
}

// runFunc runs a program with an argument list (never through a shell) and returns its stdout.
type runFunc func(ctx context.Context, name string, args ...string) ([]byte, error)

// execRun is the real runFunc. A program not on PATH fails with an error that
// errors.Is(err, exec.ErrNotFound); a failing one with an *exec.ExitError holding stderr.
func execRun(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).Output()
}

func (o Options) root() string {
	if o.SysfsRoot == "" {
		return "/"
	}
	return o.SysfsRoot
}

func (o Options) path(parts ...string) string {
	return filepath.Join(append([]string{o.root()}, parts...)...)
}

func (o Options) runner() runFunc {
	if o.run != nil {
		return o.run
	}
	return execRun
}

// ErrNotFound is wrapped by every "this vendor has no GPUs here" error.
var ErrNotFound = errors.New("no GPUs found")

// NotFoundError says a vendor has no GPUs on this node, and why we think so.
type NotFoundError struct {
	Vendor string
	Reason string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s GPUs found on this node: %s", vendorTitle(e.Vendor), e.Reason)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// InvalidInput marks asking for a vendor this node does not have as invalid input (exit 4).
func (e *NotFoundError) InvalidInput() bool { return true }

func vendorTitle(v string) string {
	switch v {
	case VendorAMD:
		return "AMD"
	case VendorNVIDIA:
		return "NVIDIA"
	}
	return v
}

// Detect returns the GPU inventory for opts.Vendor. With auto (or "") it returns the first
// vendor found, AMD before NVIDIA (the order runner uses), and an Inventory with Vendor
// "none" and no GPUs when neither is there. Asking for amd or nvidia on a node without
// them is a *NotFoundError. Other failures (unreadable sysfs, NVML errors, a failing
// nvidia-smi) are returned as they are.
func Detect(ctx context.Context, opts Options) (Inventory, error) {
	nvidia := detectNVIDIA // nvidia_nvml.go (cgo) or nvidia_nocgo.go
	if opts.nvidia != nil {
		nvidia = opts.nvidia
	}
	switch opts.Vendor {
	case VendorAMD:
		return detectAMD(ctx, opts)
	case VendorNVIDIA:
		return nvidia(ctx, opts)
	case VendorAuto, "":
	default:
		return Inventory{}, fmt.Errorf("unknown GPU vendor %q (want auto, amd or nvidia)", opts.Vendor)
	}
	for _, detect := range []func(context.Context, Options) (Inventory, error){detectAMD, nvidia} {
		inv, err := detect(ctx, opts)
		if err == nil {
			return inv, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return Inventory{}, err
		}
	}
	return Inventory{Vendor: VendorNone, GPUs: []GPU{}}, nil
}

// detectAMD reads the AMD inventory from opts.AMDSource, or, with auto, from the first
// source that answers: the AMD SMI library, the KFD topology in sysfs, the amd-smi CLI.
// Why a source was passed over goes into the inventory's Notes. The library and the CLI
// read the real machine, so with a recorded tree (SysfsRoot other than /) auto reads only
// the tree, unless AMDSMIPath names a library to use with it.
func detectAMD(ctx context.Context, opts Options) (Inventory, error) {
	switch opts.AMDSource {
	case "", SourceAuto:
		return detectAMDAuto(ctx, opts)
	case SourceAMDSMI:
		return readAMDSMI(ctx, opts)
	case SourceSysfs:
		return readKFD(opts)
	case SourceAMDSMICLI:
		return runAMDSMI(ctx, opts)
	default:
		return Inventory{}, fmt.Errorf("unknown AMD source %q (want auto, amdsmi, sysfs or amd-smi)", opts.AMDSource)
	}
}

func detectAMDAuto(ctx context.Context, opts Options) (Inventory, error) {
	live := opts.root() == "/"
	var notes []string
	var libErr error // the library was there but did not answer
	if live || opts.AMDSMIPath != "" {
		inv, err := readAMDSMI(ctx, opts)
		if err == nil {
			return inv, nil
		}
		notes = append(notes, "amdsmi not used: "+reason(err))
		if !errors.Is(err, ErrNotFound) {
			libErr = err
		}
	}
	inv, err := readKFD(opts)
	if err == nil {
		inv.Notes = append(notes, inv.Notes...)
		return inv, nil
	}
	if !errors.Is(err, ErrNotFound) || !live {
		return Inventory{}, err
	}
	// The CLI reads the same sysfs, so it rarely finds what sysfs did not; it is asked last,
	// and in auto mode its failures never hide the "not found" that lets Detect go on to
	// NVIDIA.
	if cli, cerr := runAMDSMI(ctx, opts); cerr == nil {
		cli.Notes = append(append(notes, "sysfs not used: "+reason(err)), cli.Notes...)
		return cli, nil
	}
	if libErr != nil { // say why the library that is there did not count
		return Inventory{}, &NotFoundError{Vendor: VendorAMD, Reason: reason(err) + "; and " + libErr.Error()}
	}
	return Inventory{}, err
}

// reason is an error without the "no AMD GPUs found on this node: " of a *NotFoundError.
func reason(err error) string {
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return nf.Reason
	}
	return err.Error()
}

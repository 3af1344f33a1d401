package noderecord

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/host"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/workload"
)

// TestHostRootVar is a test hook, not a user setting (it is in no help text): "<rank>:<folder>"
// makes the node of that rank read its machine facts (kernel, OS, CPU, ...) for node.json
// under folder, a recorded tree like tests/fixtures/host/h100, so that an end-to-end test
// on one machine can plant a node that differs. It changes only what the record says,
// never what runs.
const TestHostRootVar = "BENCHCTL_TEST_HOST_ROOT"

// Timeout bounds gathering a node record (the GPU library, the engine, srun).
const Timeout = 30 * time.Second

// EngineVersioner is what a node record asks of the runtime: what it is (its version and
// components). A runtime that cannot say leaves the record's engine unavailable.
type EngineVersioner interface {
	Facts(ctx context.Context) (workload.Facts, error)
}

// Sources say where a node record's facts come from.
type Sources struct {
	Lookup    func(string) (string, bool)
	HostRoot  string // the root host reads under ("": /)
	SysfsRoot string // the root the GPU inventory reads under ("": /)
	Vendor    string // the GPU vendor to ask (auto, amd, nvidia, none)
	Version   string // benchctl's
	Engine    EngineVersioner
	// Identity, when the run has asked the engine, says whether Podman runs rootless.
	Identity *image.Identity
	// For tests; nil means package gpu's.
	Detect   func(context.Context, gpu.Options) (gpu.Inventory, error)
	Snapshot func(context.Context, gpu.Options) (gpu.Inventory, error)
}

// Gather reads what this node is. It never fails and is bounded in time: a fact that
// cannot be read is left empty and the record says why.
func Gather(ctx context.Context, s Sources) *jobdir.NodeRecord {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	rec := &jobdir.NodeRecord{Version: jobdir.NodeRecordVersion, WrittenAt: time.Now().UTC(), Benchctl: s.Version,
		Images: []jobdir.ImageRecord{}, Unavailable: map[string]string{},
		GPU: jobdir.GPURecord{Devices: []jobdir.GPUDevice{}}, Engine: jobdir.EngineRecord{Components: []jobdir.NamedVersion{}}}
	rec.Machine = host.Read(ctx, host.Options{Root: s.HostRoot, Lookup: s.Lookup})
	gatherGPUs(ctx, s, rec)
	if s.Engine == nil {
		rec.Unavailable["engine"] = "no container engine was reachable"
	} else if v, err := s.Engine.Facts(ctx); err != nil {
		rec.Unavailable["engine"] = err.Error()
	} else {
		rec.Engine = jobdir.EngineRecord{Kind: v.Kind, Name: v.Name, Version: v.Version, APIVersion: v.APIVersion, OS: v.OS, Arch: v.Arch,
			Components: []jobdir.NamedVersion{}}
		// Docker's /info says whether it runs rootless; Podman's compatible one does not,
		// its own API does (the run's identity, image.IdentifyQuick).
		rec.Engine.Rootless = v.Rootless
		if s.Identity != nil && s.Identity.Kind == v.Kind && s.Identity.Podman() {
			rec.Engine.Rootless = s.Identity.Rootless
		}
		for _, c := range v.Components {
			rec.Engine.Components = append(rec.Engine.Components, jobdir.NamedVersion{Name: c.Name, Version: c.Version})
		}
	}
	return rec
}

// gatherGPUs fills the record's GPUs from the inventory (driver, runtime, models) and, where
// a management library answers, the firmware of each (AMD SMI's firmware blocks).
func gatherGPUs(ctx context.Context, s Sources, rec *jobdir.NodeRecord) {
	if s.Vendor == gpu.VendorNone {
		rec.GPU.Vendor = gpu.VendorNone
		return
	}
	detect, snapshot := s.Detect, s.Snapshot
	if detect == nil {
		detect = gpu.Detect
	}
	if snapshot == nil {
		snapshot = gpu.Snapshot
	}
	opts := gpu.Options{Vendor: s.Vendor, SysfsRoot: s.SysfsRoot}
	inv, err := detect(ctx, opts)
	if err != nil {
		rec.Unavailable["gpu"] = err.Error()
		return
	}
	g := &rec.GPU
	g.Vendor, g.Driver, g.Runtime, g.Source, g.Library = inv.Vendor, inv.Driver, inv.Runtime, inv.Source, inv.Library
	for _, d := range inv.GPUs {
		g.Devices = append(g.Devices, jobdir.GPUDevice{Index: d.Index, Name: d.Name, Arch: d.Arch, PCIBusID: d.PCIBusID, UUID: d.UUID,
			MemoryBytes: d.MemoryBytes, Firmware: []jobdir.NamedVersion{}, Links: []jobdir.GPULink{}})
	}
	if inv.Vendor == gpu.VendorNone || len(inv.GPUs) == 0 {
		return
	}
	if g.Driver == "" {
		rec.Unavailable["gpu.driver"] = "the GPU source (" + inv.Source + ") did not say"
	}
	opts.Vendor = inv.Vendor
	state, err := snapshot(ctx, opts)
	if err != nil {
		rec.Unavailable["gpu.firmware"] = "no GPU management library answered: " + err.Error()
		return
	}
	byPCI := map[string]gpu.GPU{}
	for _, d := range state.GPUs {
		byPCI[d.PCIBusID] = d
	}
	some, links := false, false
	for i := range g.Devices {
		d, ok := byPCI[g.Devices[i].PCIBusID]
		if !ok || d.SMI == nil {
			continue
		}
		for _, f := range d.SMI.Firmware {
			g.Devices[i].Firmware = append(g.Devices[i].Firmware, jobdir.NamedVersion{Name: f.Name, Version: f.Version})
			some = true
		}
		for _, l := range d.SMI.Links {
			g.Devices[i].Links = append(g.Devices[i].Links, jobdir.GPULink{Peer: l.Peer, Type: l.Type, Count: l.Count})
			links = true
		}
	}
	if !some {
		rec.Unavailable["gpu.firmware"] = state.Source + " gave no firmware versions"
	}
	if !links {
		switch state.Source {
		case gpu.SourceNVML:
			rec.Unavailable["gpu.topology"] = "NVML reported no active NVLink (PCIe-only GPUs, or a driver without the query)"
		default:
			rec.Unavailable["gpu.topology"] = "GPU links (xGMI) are read from NVML only; " + state.Source + " does not give them to benchctl"
		}
	}
}

// HostRoot is the test hook's folder for this rank, or "".
func HostRoot(lookup func(string) (string, bool), rank int) string {
	v, ok := lookup(TestHostRootVar)
	if !ok {
		return ""
	}
	r, dir, ok := strings.Cut(v, ":")
	if n, err := strconv.Atoi(r); !ok || err != nil || n != rank || dir == "" {
		return ""
	}
	return dir
}

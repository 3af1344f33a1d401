package jobdir

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RecordField is one compared fact of a node record: a stable name ("kernel",
// "net.mlx5_0.port1", "gpu3.firmware.VBIOS") and its value as a person reads it.
type RecordField struct {
	Name  string
	Value string
}

// Unreadable is a compared field's value when the node could not read it, and Empty when
// the node read it and there was nothing (no RDMA devices, no GPU driver).
const (
	Unreadable = "(unavailable)"
	Empty      = "(none)"
)

// Fields are the facts of the record that should be the same on every node of a job, in
// a stable order: what differs between two nodes is exactly what makes one rank slower.
// Facts that differ on every node by nature (hostname, node GUIDs, PCI addresses, UUIDs,
// when it was written) are left out, and memory is compared in GiB (the kernel keeps a
// few MiB back that vary from boot to boot). A fact that could not be read is Unreadable.
func (r *NodeRecord) Fields() []RecordField {
	var out []RecordField
	m := r.Machine
	add := func(name, unavail, value string) {
		if value == "" {
			value = Empty
			if _, ok := m.Unavailable[unavail]; ok {
				value = Unreadable
			} else if _, ok := r.Unavailable[unavail]; ok {
				value = Unreadable
			}
		}
		out = append(out, RecordField{Name: name, Value: value})
	}
	add("kernel", "kernel", strings.TrimSpace(m.Kernel.Release+" "+m.Kernel.Version))
	add("os", "os", m.OS.PrettyName)
	cpu := ""
	if m.CPU.Model != "" || m.CPU.Threads > 0 {
		cpu = fmt.Sprintf("%s, %d sockets, %d cores, %d threads", m.CPU.Model, m.CPU.Sockets, m.CPU.Cores, m.CPU.Threads)
	}
	add("cpu", "cpu", cpu)
	mem := ""
	if m.MemoryBytes > 0 {
		mem = gib(m.MemoryBytes)
	}
	add("memory", "memory", mem)
	var numa []string
	for _, n := range m.NUMA {
		numa = append(numa, fmt.Sprintf("node%d cpus %s %s", n.ID, n.CPUs, gib(n.MemoryBytes)))
	}
	add("numa", "numa", strings.Join(numa, "; "))
	var devs []string
	for _, d := range m.Network {
		devs = append(devs, d.Name)
	}
	add("net.devices", "network", strings.Join(devs, ", "))
	for _, d := range m.Network {
		add("net."+d.Name+".firmware", "", d.Firmware)
		add("net."+d.Name+".board", "", d.BoardID)
		for _, p := range d.Ports {
			add("net."+d.Name+".port"+strconv.Itoa(p.Number), "", strings.TrimSpace(p.State+" "+p.Rate+" "+p.LinkLayer))
		}
	}
	add("slurm", "slurm", m.Slurm)

	g := r.GPU
	add("gpu.vendor", "gpu", g.Vendor)
	add("gpu.driver", "gpu", g.Driver)
	add("gpu.runtime", "gpu", g.Runtime)
	add("gpu.models", "gpu", gpuModels(g.Devices))
	for _, d := range g.Devices {
		prefix := "gpu" + strconv.Itoa(d.Index)
		for _, f := range d.Firmware {
			add(prefix+".firmware."+f.Name, "", f.Version)
		}
		if len(d.Links) > 0 {
			var links []string
			for _, l := range d.Links {
				links = append(links, fmt.Sprintf("%s x%d to gpu%d", l.Type, l.Count, l.Peer))
			}
			add(prefix+".links", "", strings.Join(links, ", "))
		}
	}

	e := r.Engine
	engine := ""
	if e.Version != "" {
		engine = strings.TrimSpace(fmt.Sprintf("%s %s (API %s)", e.Name, e.Version, e.APIVersion))
		if e.Rootless {
			engine += ", rootless"
		}
	}
	add("engine", "engine", engine)
	for _, c := range e.Components {
		add("engine."+c.Name, "", c.Version)
	}
	for _, im := range r.Images {
		add("image."+im.Name, "images", im.ID)
		if im.Digest != "" {
			add("image."+im.Name+".digest", "", im.Digest)
		}
	}
	add("benchctl", "", r.Benchctl)
	return out
}

// gpuModels is "8 x NVIDIA H100 80GB HBM3 (sm_90)", or each model with its count when
// they differ, in a stable order.
func gpuModels(devs []GPUDevice) string {
	count := map[string]int{}
	var names []string
	for _, d := range devs {
		n := d.Name
		if d.Arch != "" {
			n += " (" + d.Arch + ")"
		}
		if count[n] == 0 {
			names = append(names, n)
		}
		count[n]++
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d x %s", count[n], n)
	}
	return strings.Join(parts, ", ")
}

// gib is a size in GiB, rounded: "503 GiB".
func gib(b uint64) string { return strconv.FormatUint((b+1<<29)>>30, 10) + " GiB" }

package diagnostics

import (
	"fmt"
	"strings"

	"github.com/benchctl/benchctl/gpu"
)

// GPUState is what the node's GPU management library said about every GPU of the node
// when the report was taken: memory in use, temperature and the processes on each (other
// jobs' too, which is often the point).
type GPUState struct {
	Vendor  string   `json:"vendor"`
	Source  string   `json:"source"`            // amdsmi or nvml
	Library string   `json:"library,omitempty"` // its version and file, where known
	GPUs    []GPUUse `json:"gpus"`
}

// GPUUse is one GPU in a GPUState.
type GPUUse struct {
	Index           int           `json:"index"`
	PCIBusID        string        `json:"pciBusId"`
	Name            string        `json:"name"`
	MemoryBytes     uint64        `json:"memoryBytes"`
	MemoryUsedBytes uint64        `json:"memoryUsedBytes"`
	TemperatureC    *int64        `json:"temperatureC,omitempty"`
	Processes       []gpu.Process `json:"processes"`
	ProcessesTotal  int           `json:"processesTotal,omitempty"` // when more than Processes lists
	Unavailable     []string      `json:"unavailable,omitempty"`
}

// gpuState keeps the part of a snapshot that explains a failure (not firmware or clocks).
func gpuState(inv gpu.Inventory) *GPUState {
	s := &GPUState{Vendor: inv.Vendor, Source: inv.Source, Library: inv.Library, GPUs: []GPUUse{}}
	for _, g := range inv.GPUs {
		u := GPUUse{Index: g.Index, PCIBusID: g.PCIBusID, Name: g.Name, MemoryBytes: g.MemoryBytes, Processes: []gpu.Process{}}
		if m := g.SMI; m != nil {
			u.MemoryUsedBytes, u.TemperatureC, u.ProcessesTotal, u.Unavailable = m.MemoryUsedBytes, m.TemperatureC, m.ProcessesTotal, m.Unavailable
			if m.Processes != nil {
				u.Processes = m.Processes
			}
		}
		s.GPUs = append(s.GPUs, u)
	}
	return s
}

// summary is the state as text: one line per GPU.
func (s *GPUState) summary() string {
	var b strings.Builder
	from := s.Source
	if s.Library != "" {
		from += ", " + s.Library
	}
	fmt.Fprintf(&b, "gpu state (%s):\n", from)
	for _, g := range s.GPUs {
		parts := []string{fmt.Sprintf("%s of %s used", gib(g.MemoryUsedBytes), gib(g.MemoryBytes))}
		if g.TemperatureC != nil {
			parts = append(parts, fmt.Sprintf("%d °C", *g.TemperatureC))
		}
		if len(g.Processes) == 0 {
			parts = append(parts, "no processes")
		}
		for _, p := range g.Processes {
			d := fmt.Sprintf("pid %d %s (%s", p.PID, p.Name, gib(p.MemoryBytes))
			if p.Container != "" {
				d += ", container " + p.Container
			}
			parts = append(parts, d+")")
		}
		if g.ProcessesTotal > len(g.Processes) {
			parts = append(parts, fmt.Sprintf("%d more processes", g.ProcessesTotal-len(g.Processes)))
		}
		for _, u := range g.Unavailable {
			parts = append(parts, "unavailable: "+u)
		}
		fmt.Fprintf(&b, "  gpu %d %s: %s\n", g.Index, g.PCIBusID, strings.Join(parts, "; "))
	}
	return b.String()
}

// gib is a byte count in GiB with one decimal, MiB below 1 GiB.
func gib(n uint64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

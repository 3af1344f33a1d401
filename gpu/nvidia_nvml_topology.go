//go:build cgo

package gpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlTopologyDevice is the part of an NVML device handle the firmware and link facts
// call.
type nvmlTopologyDevice interface {
	GetVbiosVersion() (string, nvml.Return)
	GetNvLinkState(int) (nvml.EnableState, nvml.Return)
	GetNvLinkRemotePciInfo(int) (nvml.PciInfo, nvml.Return)
}

var _ nvmlTopologyDevice = nvml.Device(nil)

// nvmlTopology adds each GPU's VBIOS version (SMI.Firmware "VBIOS") and its active NVLinks
// (SMI.Links: per peer, the number of links; a peer that is not one of this node's GPUs, an
// NVSwitch on HGX/DGX boards, is peer -1, "NVLink (switch)"). A driver or mock without the
// query leaves the fact out and notes it in SMI.Unavailable; a query that panics (a mock
// without the method) is such a fact too, never a lost snapshot.
func nvmlTopology(lib nvmlLibrary, inv *Inventory) {
	byBus := map[string]int{}
	for _, g := range inv.GPUs {
		byBus[g.PCIBusID] = g.Index
	}
	for i := range inv.GPUs {
		g := &inv.GPUs[i]
		if g.SMI == nil {
			continue
		}
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		d, ok := h.(nvmlTopologyDevice)
		if !ok {
			continue
		}
		if v, ret := callNVML(func() (string, nvml.Return) { return d.GetVbiosVersion() }); ret == nvml.SUCCESS && v != "" {
			g.SMI.Firmware = append(g.SMI.Firmware, Firmware{Name: "VBIOS", Version: v})
		} else if ret != nvml.ERROR_NOT_SUPPORTED && ret != nvml.SUCCESS {
			g.SMI.Unavailable = append(g.SMI.Unavailable, "VBIOS version: "+ret.Error())
		}
		counts := map[int]int{}
		var order []int
		var failed nvml.Return // the first unexpected answer, when no link answered
		answered := false
		for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
			// Every link is asked: one unsupported or fused link in the middle must not hide
			// the ones after it (a node with fewer links is what the record is for).
			st, ret := callNVML(func() (nvml.EnableState, nvml.Return) { return d.GetNvLinkState(link) })
			if ret != nvml.SUCCESS {
				if ret != nvml.ERROR_NOT_SUPPORTED && ret != nvml.ERROR_INVALID_ARGUMENT && failed == nvml.SUCCESS {
					failed = ret
				}
				continue
			}
			answered = true
			if st != nvml.FEATURE_ENABLED {
				continue
			}
			peer := -1
			if pci, ret := callNVML(func() (nvml.PciInfo, nvml.Return) { return d.GetNvLinkRemotePciInfo(link) }); ret == nvml.SUCCESS {
				if idx, ok := byBus[normalizePCI(cString(pci.BusId[:]))]; ok {
					peer = idx
				}
			}
			if counts[peer] == 0 {
				order = append(order, peer)
			}
			counts[peer]++
		}
		if !answered && failed != nvml.SUCCESS {
			g.SMI.Unavailable = append(g.SMI.Unavailable, "NVLink: "+failed.Error())
		}
		for _, p := range order {
			kind := "NVLink"
			if p < 0 {
				kind = "NVLink (switch)"
			}
			g.SMI.Links = append(g.SMI.Links, Link{Peer: p, Type: kind, Count: counts[p]})
		}
	}
}

// callNVML calls one NVML query, turning a panic (a mock without the method) into an error
// code.
func callNVML[T any](f func() (T, nvml.Return)) (v T, ret nvml.Return) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, ret = zero, nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f()
}

package host

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// maxPorts bounds the ports read of one device.
const maxPorts = 64

// readNetwork reads the RDMA devices of /sys/class/infiniband: firmware (fw_ver), board
// id, node GUID, the Ethernet/IPoIB interfaces (device/net), and per port its state,
// rate and link layer (Ethernet: RoCE). A machine without the folder has none, which is
// not unavailable: an empty list. A device whose facts cannot all be read is kept with
// what could be, and the first failure is returned.
func readNetwork(o Options) ([]NetDevice, error) {
	names, err := o.list("sys", "class", "infiniband")
	if errors.Is(err, fs.ErrNotExist) {
		return []NetDevice{}, nil
	}
	if err != nil {
		return []NetDevice{}, err
	}
	out := []NetDevice{}
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, name := range names {
		d := NetDevice{Name: cut(name), Ports: []Port{}}
		base := []string{"sys", "class", "infiniband", name}
		d.Firmware, err = o.value(append(base, "fw_ver")...)
		keep(err)
		d.BoardID, _ = o.value(append(base, "board_id")...) // optional
		d.NodeGUID, _ = o.value(append(base, "node_guid")...)
		if nets, err := o.list(append(base, "device", "net")...); err == nil {
			for _, n := range nets {
				d.NetDevices = append(d.NetDevices, cut(n))
			}
		}
		ports, err := o.list(append(base, "ports")...)
		keep(err)
		for _, p := range ports {
			num := numericSuffix(p, "")
			if num < 0 {
				continue
			}
			if len(d.Ports) == maxPorts {
				keep(fmt.Errorf("%s has more than %d ports; the rest are not read", o.path(base...), maxPorts))
				break
			}
			pb := append(slices.Clone(base), "ports", p)
			port := Port{Number: num}
			st, err := o.value(append(pb, "state")...)
			keep(err)
			if _, name, ok := strings.Cut(st, ":"); ok { // "4: ACTIVE"
				st = strings.TrimSpace(name)
			}
			port.State = st
			port.Rate, err = o.value(append(pb, "rate")...)
			keep(err)
			port.LinkLayer, err = o.value(append(pb, "link_layer")...)
			keep(err)
			d.Ports = append(d.Ports, port)
		}
		slices.SortFunc(d.Ports, func(a, b Port) int { return a.Number - b.Number })
		out = append(out, d)
	}
	return out, first
}

package gpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// normalizePCI turns NVML's and nvidia-smi's "00000000:07:00.0" (8-digit domain, upper
// case) into the sysfs form "0000:07:00.0". Anything it cannot read comes back lower-cased
// and otherwise unchanged.
func normalizePCI(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || strings.Count(rest, ":") != 1 {
		return s
	}
	d, err := strconv.ParseUint(dom, 16, 32)
	if err != nil {
		return s
	}
	busDev, fn, ok := strings.Cut(rest, ".")
	bus, dev, _ := strings.Cut(busDev, ":")
	b, err1 := strconv.ParseUint(bus, 16, 8)
	v, err2 := strconv.ParseUint(dev, 16, 8)
	f, err3 := strconv.ParseUint(fn, 16, 8)
	if !ok || err1 != nil || err2 != nil || err3 != nil {
		return s
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f)
}

// pciFromLocation decodes KFD's domain and location_id (bus<<8 | device<<3 | function).
func pciFromLocation(domain, location uint64) string {
	bus := (location >> 8) & 0xff
	dev := (location >> 3) & 0x1f
	fn := location & 0x7
	return fmt.Sprintf("%04x:%02x:%02x.%x", domain, bus, dev, fn)
}

// numaNode reads /sys/bus/pci/devices/<pci>/numa_node under the root; -1 if unknown.
func numaNode(opts Options, pci string) int {
	if pci == "" {
		return -1
	}
	b, err := os.ReadFile(opts.path("sys", "bus", "pci", "devices", pci, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// readLine returns the first line of a small file under the root, "" if it is missing.
func readLine(opts Options, parts ...string) string {
	b, err := readFile(opts, parts...)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// readFile reads a file under the root.
func readFile(opts Options, parts ...string) ([]byte, error) {
	return os.ReadFile(opts.path(parts...))
}

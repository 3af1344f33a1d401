package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// hwmonMaxRead bounds every read of a sysfs attribute: the values are a few digits, and
// a file that holds more (or a FIFO, or a device) is not what it should be.
const hwmonMaxRead = 64

// hwmonGPU is where one GPU's telemetry is in sysfs: the attribute files found when the
// sampler was opened ("" for one the GPU does not have).
type hwmonGPU struct {
	index  int
	device string // <root>/sys/bus/pci/devices/<pci>
	power  string // hwmon power1_average, else power1_input: microwatts
	energy string // hwmon energy1_input: microjoules
	temp   string // hwmon temp<N>_input labelled junction, else edge: millidegrees Celsius
	gfx    string // hwmon freq1_input (sclk): Hz
	mem    string // hwmon freq2_input (mclk): Hz
	busy   string // device/gpu_busy_percent: 0-100
	vram   string // device/mem_info_vram_used: bytes
}

// openHwmonSampler finds each GPU's amdgpu hwmon folder under its PCI device
// (<root>/sys/bus/pci/devices/<pci>/hwmon/hwmon<N>, the same folder as
// /sys/class/drm/card<N>/device/hwmon) and the attribute files it has. A GPU without a PCI
// address or a hwmon folder is an error; a missing attribute is recorded once as
// unavailable. hwmon has no throttle status.
func openHwmonSampler(opts Options, inv Inventory, u *unavailable) (*boundedSampler, error) {
	gpus := make([]hwmonGPU, 0, len(inv.GPUs))
	for _, g := range inv.GPUs {
		if g.PCIBusID == "" {
			return nil, &NotFoundError{Vendor: VendorAMD, Reason: fmt.Sprintf("GPU %d has no PCI address to find its hwmon folder by", g.Index)}
		}
		dev := opts.path("sys", "bus", "pci", "devices", g.PCIBusID)
		hw, err := amdgpuHwmon(dev)
		if err != nil {
			return nil, &NotFoundError{Vendor: VendorAMD, Reason: fmt.Sprintf("GPU %d: %v", g.Index, err)}
		}
		h := hwmonGPU{index: g.Index, device: dev}
		have := func(field, why string, paths ...string) string {
			for _, p := range paths {
				if st, err := os.Stat(p); err == nil && !st.IsDir() {
					return p
				}
			}
			u.add(g.Index, field, why)
			return ""
		}
		h.power = have("power", "hwmon has no power1_average or power1_input", filepath.Join(hw, "power1_average"), filepath.Join(hw, "power1_input"))
		h.energy = have("energy", "hwmon has no energy1_input (no energy counter on this GPU)", filepath.Join(hw, "energy1_input"))
		h.temp = have("temperature", "hwmon has no temperature labelled junction or edge", hwmonLabelled(hw, "temp", "junction", "edge")...)
		h.gfx = have("gfxClock", "hwmon has no sclk (freq*_label)", hwmonLabelled(hw, "freq", "sclk")...)
		h.mem = have("memClock", "hwmon has no mclk (freq*_label)", hwmonLabelled(hw, "freq", "mclk")...)
		h.busy = have("util", "no gpu_busy_percent", filepath.Join(dev, "gpu_busy_percent"))
		h.vram = have("memoryUsed", "no mem_info_vram_used", filepath.Join(dev, "mem_info_vram_used"))
		u.add(g.Index, "throttle", "hwmon has no throttle status")
		gpus = append(gpus, h)
	}
	return newBoundedSampler(SourceSysfs, inv, u, func() []Reading { return readHwmon(gpus, u) }, nil), nil
}

// amdgpuHwmon is the device's hwmon folder whose name is amdgpu.
func amdgpuHwmon(dev string) (string, error) {
	dirs, _ := filepath.Glob(filepath.Join(dev, "hwmon", "hwmon*"))
	for _, d := range dirs {
		if name, err := readAttr(filepath.Join(d, "name")); err == nil && name == "amdgpu" {
			return d, nil
		}
	}
	if _, err := os.Stat(dev); err != nil {
		return "", fmt.Errorf("%s: %w", dev, errors.Unwrap(err))
	}
	return "", fmt.Errorf("%s has no amdgpu hwmon folder", dev)
}

// hwmonLabelled is the <kind><N>_input files whose <kind><N>_label is one of labels, in the
// order of labels.
func hwmonLabelled(hw, kind string, labels ...string) []string {
	files, _ := filepath.Glob(filepath.Join(hw, kind+"*_label"))
	var out []string
	for _, want := range labels {
		for _, f := range files {
			if l, err := readAttr(f); err == nil && l == want {
				out = append(out, strings.TrimSuffix(f, "_label")+"_input")
			}
		}
	}
	return out
}

func readHwmon(gpus []hwmonGPU, u *unavailable) []Reading {
	out := make([]Reading, len(gpus))
	for i, g := range gpus {
		out[i] = g.read(u)
	}
	return out
}

func (g hwmonGPU) read(u *unavailable) Reading {
	gone := func(err error) Reading {
		u.add(g.index, "gpu", err.Error())
		return Reading{Index: g.index, Err: err}
	}
	if _, err := os.Stat(g.device); err != nil {
		return gone(fmt.Errorf("sysfs: the GPU's device folder is gone: %w", err))
	}
	type fact struct {
		field, path string
		n           uint64
		err         error
	}
	facts := [...]fact{{field: "power", path: g.power}, {field: "energy", path: g.energy}, {field: "temperature", path: g.temp},
		{field: "gfxClock", path: g.gfx}, {field: "memClock", path: g.mem}, {field: "util", path: g.busy}, {field: "memoryUsed", path: g.vram}}
	asked, missing := 0, 0
	for i := range facts {
		f := &facts[i]
		if f.path == "" {
			continue
		}
		asked++
		if f.n, f.err = readUintAttr(f.path); errors.Is(f.err, os.ErrNotExist) {
			missing++
		}
	}
	if asked > 0 && missing == asked { // the driver let go of the GPU: every file went with it
		return gone(fmt.Errorf("sysfs: the GPU's attribute files are gone (%w)", facts[0].err))
	}
	r := Reading{Index: g.index}
	for _, f := range facts {
		if f.path == "" {
			continue
		}
		if f.err != nil {
			u.add(g.index, f.field, f.err.Error())
			continue
		}
		switch f.field {
		case "power":
			r.PowerW = ptr(float64(f.n) / 1e6)
		case "energy":
			r.EnergyJ = ptr(float64(f.n) / 1e6)
		case "temperature":
			r.TemperatureC = ptr(float64(f.n) / 1e3)
		case "gfxClock":
			r.GFXClockMHz = ptr(uint32(f.n / 1e6))
		case "memClock":
			r.MemClockMHz = ptr(uint32(f.n / 1e6))
		case "util":
			r.UtilPercent = ptr(float64(f.n))
		case "memoryUsed":
			r.MemoryUsedBytes = ptr(f.n)
		}
	}
	return r
}

// readUintAttr reads a sysfs attribute holding one unsigned number.
func readUintAttr(path string) (uint64, error) {
	s, err := readAttr(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: not a number: %q", path, s)
	}
	return n, nil
}

// readAttr reads a sysfs attribute's first line, at most hwmonMaxRead bytes. It never
// blocks: the file is opened non-blocking (a FIFO then opens and reads nothing) and must
// be a regular file; one that holds more than hwmonMaxRead bytes is an error.
func readAttr(path string) (string, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", fmt.Errorf("%s: not a regular file", path)
	}
	var buf [hwmonMaxRead + 1]byte
	n, err := syscall.Read(fd, buf[:])
	if err != nil {
		return "", &os.PathError{Op: "read", Path: path, Err: err}
	}
	if n > hwmonMaxRead {
		return "", fmt.Errorf("%s: more than %d bytes, not a sysfs value", path, hwmonMaxRead)
	}
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return strings.TrimSpace(line), nil
}

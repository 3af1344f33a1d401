package gpu

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const amdVendorID = 0x1002

// KFD memory heap types (HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC / _PRIVATE): device memory.
const (
	heapFrameBufferPublic  = 1
	heapFrameBufferPrivate = 2
)

// readKFD builds the AMD inventory from the KFD topology:
// <root>/sys/class/kfd/kfd/topology/nodes/<n>/properties, one "key value" per line. Nodes
// with simd_count 0 are CPUs and are skipped; the remaining nodes, in node-number order,
// are the GPUs as ROCr numbers them (the order ROCR_VISIBLE_DEVICES counts). On MI250X each
// GCD is its own node, so it is its own GPU here too.
func readKFD(opts Options) (Inventory, error) {
	dir := opts.path("sys", "class", "kfd", "kfd", "topology", "nodes")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Inventory{}, &NotFoundError{Vendor: VendorAMD, Reason: dir + " does not exist (is the amdgpu driver loaded?)"}
	}
	if err != nil {
		return Inventory{}, fmt.Errorf("reading the KFD topology: %w", err)
	}
	var nodes []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= 0 {
			nodes = append(nodes, n)
		}
	}
	sort.Ints(nodes) // "10" sorts before "2" as a name
	gpus := []GPU{}
	for _, n := range nodes {
		nodeDir := filepath.Join(dir, strconv.Itoa(n))
		props, err := readProperties(filepath.Join(nodeDir, "properties"))
		if err != nil {
			return Inventory{}, fmt.Errorf("KFD node %d: %w", n, err)
		}
		if props["simd_count"] == 0 || props["vendor_id"] != amdVendorID {
			continue // a CPU node (or an agent that is not an AMD GPU)
		}
		g, err := kfdGPU(opts, nodeDir, props)
		if err != nil {
			return Inventory{}, fmt.Errorf("KFD node %d: %w", n, err)
		}
		g.Index = len(gpus)
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return Inventory{}, &NotFoundError{Vendor: VendorAMD, Reason: "the KFD topology under " + dir + " has no GPU nodes (simd_count > 0)"}
	}
	return Inventory{
		Vendor:  VendorAMD,
		GPUs:    gpus,
		Driver:  readLine(opts, "sys", "module", "amdgpu", "version"), // only the DKMS driver has one
		Runtime: rocmVersion(opts),
		Source:  SourceSysfs,
	}, nil
}

func kfdGPU(opts Options, nodeDir string, props map[string]uint64) (GPU, error) {
	g := GPU{NUMANode: -1, Devices: []string{"/dev/kfd"}}
	if arch, err := gfxTarget(props["gfx_target_version"]); err == nil {
		g.Arch = arch
	}
	g.Name = amdName(props["device_id"], g.Arch)
	if id := props["unique_id"]; id != 0 {
		g.UUID = fmt.Sprintf("GPU-%016x", id) // the form ROCR_VISIBLE_DEVICES and rocminfo use
	}
	if _, ok := props["location_id"]; ok {
		g.PCIBusID = pciFromLocation(props["domain"], props["location_id"])
		g.NUMANode = numaNode(opts, g.PCIBusID)
	}
	if minor := props["drm_render_minor"]; minor != 0 {
		g.RenderNode = "/dev/dri/renderD" + strconv.FormatUint(minor, 10)
		g.Devices = append(g.Devices, g.RenderNode)
	}
	mem, err := kfdDeviceMemory(nodeDir)
	if err != nil {
		return GPU{}, err
	}
	if mem == 0 {
		mem = props["local_mem_size"] // newer kernels print 0 here; mem_banks is the real source
	}
	g.MemoryBytes = mem
	return g, nil
}

// kfdDeviceMemory sums size_in_bytes of the node's frame-buffer memory banks.
func kfdDeviceMemory(nodeDir string) (uint64, error) {
	banks, err := os.ReadDir(filepath.Join(nodeDir, "mem_banks"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, b := range banks {
		props, err := readProperties(filepath.Join(nodeDir, "mem_banks", b.Name(), "properties"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("memory bank %s: %w", b.Name(), err)
		}
		if h := props["heap_type"]; h == heapFrameBufferPublic || h == heapFrameBufferPrivate {
			total += props["size_in_bytes"]
		}
	}
	return total, nil
}

// readProperties reads a KFD properties file: "key value" lines with decimal values.
// Lines it cannot read are skipped, so a new kernel's additions never break the reader.
func readProperties(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			props[k] = n
		}
	}
	return props, sc.Err()
}

// rocmVersion reads /opt/rocm/.info/version ("6.2.0-66") under the root, without the build
// number; "" when ROCm is not installed there.
func rocmVersion(opts Options) string {
	v := readLine(opts, "opt", "rocm", ".info", "version")
	v, _, _ = strings.Cut(v, "-")
	return v
}

package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// runAMDSMI is the AMD inventory from the amd-smi CLI: `amd-smi list --json` (index, BDF)
// and `amd-smi static --json` (name, arch, VRAM, driver, NUMA node), joined on the GPU
// index: the third AMD source, after the library and sysfs (doc.go). The JSON shape differs
// between amd-smi releases (a bare list before ROCm 6.4, {"gpu_data": [...]} after; VRAM
// as {"value","unit"}, "N MB" or vram_size_mb), and this reader accepts each of them. The
// render node comes from /sys/bus/pci/devices/<bdf>/drm under the root.
func runAMDSMI(ctx context.Context, opts Options) (Inventory, error) {
	run := opts.runner()
	list, err := run(ctx, "amd-smi", "list", "--json")
	if errors.Is(err, exec.ErrNotFound) {
		return Inventory{}, &NotFoundError{Vendor: VendorAMD, Reason: "amd-smi is not on PATH"}
	}
	if err != nil {
		return Inventory{}, fmt.Errorf("amd-smi list: %w", err)
	}
	static, err := run(ctx, "amd-smi", "static", "--json")
	if err != nil {
		return Inventory{}, fmt.Errorf("amd-smi static: %w", err)
	}
	return parseAMDSMI(opts, list, static)
}

func parseAMDSMI(opts Options, listOut, staticOut []byte) (Inventory, error) {
	list, err := amdSMIEntries(listOut)
	if err != nil {
		return Inventory{}, fmt.Errorf("amd-smi list --json: %w", err)
	}
	static, err := amdSMIEntries(staticOut)
	if err != nil {
		return Inventory{}, fmt.Errorf("amd-smi static --json: %w", err)
	}
	byIndex := map[int]map[string]any{}
	for _, s := range static {
		if i, ok := jsonInt(s["gpu"]); ok {
			byIndex[i] = s
		}
	}
	inv := Inventory{Vendor: VendorAMD, GPUs: []GPU{}, Runtime: rocmVersion(opts), Source: SourceAMDSMICLI}
	for _, l := range list {
		idx, ok := jsonInt(l["gpu"])
		if !ok {
			return Inventory{}, fmt.Errorf("amd-smi list --json: an entry has no \"gpu\" index")
		}
		s := byIndex[idx]
		g := GPU{Index: idx, NUMANode: -1, Devices: []string{"/dev/kfd"}}
		g.PCIBusID = normalizePCI(firstString(jsonString(l, "bdf"), jsonString(s, "bus", "bdf")))
		g.Arch = jsonString(s, "asic", "target_graphics_version")
		devID, _ := strconv.ParseUint(strings.TrimPrefix(jsonString(s, "asic", "device_id"), "0x"), 16, 64)
		g.Name = firstString(jsonString(s, "asic", "market_name"), amdName(devID, g.Arch))
		if serial, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(jsonString(s, "asic", "asic_serial")), "0x"), 16, 64); err == nil && serial != 0 {
			g.UUID = fmt.Sprintf("GPU-%016x", serial) // = KFD unique_id, the form ROCR_VISIBLE_DEVICES takes
		} else {
			g.UUID = jsonString(l, "uuid")
		}
		g.MemoryBytes = vramBytes(s)
		if n, ok := jsonInt(jsonPath(s, "numa", "node")); ok && n >= 0 {
			g.NUMANode = n
		} else {
			g.NUMANode = numaNode(opts, g.PCIBusID)
		}
		if r := pciRenderNode(opts, g.PCIBusID); r != "" {
			g.RenderNode = r
			g.Devices = append(g.Devices, r)
		}
		if inv.Driver == "" {
			inv.Driver = firstString(jsonString(s, "driver", "version"), jsonString(s, "driver", "driver_version"))
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	if len(inv.GPUs) == 0 {
		return Inventory{}, &NotFoundError{Vendor: VendorAMD, Reason: "amd-smi lists no GPUs"}
	}
	sort.Slice(inv.GPUs, func(i, j int) bool { return inv.GPUs[i].Index < inv.GPUs[j].Index })
	return inv, nil
}

// amdSMIEntries reads amd-smi's JSON: a list of per-GPU objects, or {"gpu_data": [...]}.
// Lines before the JSON (amd-smi prints group-membership warnings to stdout) are skipped.
func amdSMIEntries(out []byte) ([]map[string]any, error) {
	var doc any
	err := errors.New("no JSON in the output")
	for off := 0; off < len(out); {
		line := out[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && (t[0] == '[' || t[0] == '{') {
			if err = json.NewDecoder(bytes.NewReader(out[off:])).Decode(&doc); err == nil {
				break // "[WARNING] ..." lines start with '[' too: the first that parses wins; text after it is ignored
			}
		}
		off += len(line)
	}
	if err != nil {
		return nil, err
	}
	if m, ok := doc.(map[string]any); ok {
		doc = m["gpu_data"]
	}
	list, ok := doc.([]any)
	if !ok {
		return nil, errors.New("want a list of GPUs or {\"gpu_data\": [...]}")
	}
	var entries []map[string]any
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			if _, isGPU := m["gpu"]; isGPU { // CPU entries have "cpu"
				entries = append(entries, m)
			}
		}
	}
	return entries, nil
}

// vramBytes reads vram.size ({"value": N, "unit": "MB"} or "N MB") or vram.vram_size_mb.
// amd-smi's MB are MiB (196592 MB on a 192 GiB MI300X).
func vramBytes(s map[string]any) uint64 {
	v := jsonPath(s, "vram", "size")
	unit := "MB"
	if m, ok := v.(map[string]any); ok {
		v = m["value"]
		if u, ok := m["unit"].(string); ok {
			unit = u
		}
	}
	if str, ok := v.(string); ok {
		num, u, _ := strings.Cut(strings.TrimSpace(str), " ")
		if u != "" {
			unit = u
		}
		v = num
	}
	if v == nil {
		v = jsonPath(s, "vram", "vram_size_mb")
	}
	n, ok := jsonInt(v)
	if !ok || n < 0 {
		return 0
	}
	switch strings.ToUpper(unit) {
	case "GB":
		return uint64(n) << 30
	case "KB":
		return uint64(n) << 10
	case "B":
		return uint64(n)
	}
	return uint64(n) << 20
}

func jsonPath(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// jsonString is a string at a path; "" for missing values and amd-smi's "N/A".
func jsonString(m map[string]any, keys ...string) string {
	s, _ := jsonPath(m, keys...).(string)
	if s = strings.TrimSpace(s); s == "N/A" {
		return ""
	}
	return s
}

// jsonInt reads a JSON number or a numeric string.
func jsonInt(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		return int(x), x == float64(int(x))
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return n, err == nil
	}
	return 0, false
}

func firstString(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

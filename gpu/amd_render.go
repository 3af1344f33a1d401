package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// RenderNodeError says a selected AMD GPU has no render node this package could find,
// and where it looked: the GPU would reach a container without its /dev/dri/renderD*.
type RenderNodeError struct {
	GPU    GPU
	Looked []string // each place, with what it held
}

func (e *RenderNodeError) Error() string {
	g := e.GPU
	who := "AMD GPU " + strconv.Itoa(g.Index)
	if g.PCIBusID != "" {
		who += " (" + g.PCIBusID + ")"
	}
	return who + " has no render node (/dev/dri/renderD*): " + strings.Join(e.Looked, "; ") +
		"; is the amdgpu driver bound to it (ls -l /sys/bus/pci/devices/<address>/drm)?"
}

// InvalidInput: the node cannot give the job this GPU (exit 4), as with any GPU request
// the node cannot satisfy.
func (e *RenderNodeError) InvalidInput() bool { return true }

var renderNodeRE = regexp.MustCompile(`^/dev/dri/renderD[0-9]+$`)

// RenderNode is the render node of an AMD GPU: the inventory's (the KFD topology's
// drm_render_minor, or the PCI device's drm/renderD* entry), else the PCI device's
// drm/renderD* entry under opts' root, else the drm_render_minor of the KFD topology node
// at the GPU's PCI address. None is a *RenderNodeError naming the GPU and each place
// looked at.
func RenderNode(opts Options, g GPU) (string, error) {
	if g.RenderNode != "" {
		if !renderNodeRE.MatchString(g.RenderNode) {
			return "", &RenderNodeError{GPU: g, Looked: []string{fmt.Sprintf("the inventory names %q, which is no /dev/dri/renderD<N>", g.RenderNode)}}
		}
		return g.RenderNode, nil
	}
	if g.PCIBusID == "" {
		return "", &RenderNodeError{GPU: g, Looked: []string{"the inventory has no render node and no PCI address to look one up by"}}
	}
	r, looked := pciDRMRenderNode(opts, g.PCIBusID)
	if r != "" {
		return r, nil
	}
	minor, where := kfdRenderMinor(opts, g.PCIBusID)
	if minor > 0 {
		return "/dev/dri/renderD" + strconv.FormatUint(minor, 10), nil
	}
	return "", &RenderNodeError{GPU: g, Looked: []string{looked, where}}
}

// pciRenderNode is the render node of the PCI device at pci, from its drm/renderD<N>
// entry under the root; "" when it has none.
func pciRenderNode(opts Options, pci string) string {
	r, _ := pciDRMRenderNode(opts, pci)
	return r
}

// pciDRMRenderNode reads /sys/bus/pci/devices/<pci>/drm for a renderD<N> entry (the lowest,
// should there be several); "" and where it looked when there is none.
func pciDRMRenderNode(opts Options, pci string) (string, string) {
	if pci == "" {
		return "", "no PCI address"
	}
	drm := opts.path("sys", "bus", "pci", "devices", pci, "drm")
	ents, err := os.ReadDir(drm)
	if err != nil {
		return "", drm + ": " + shortErr(err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); renderNodeRE.MatchString("/dev/dri/" + n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", drm + ": no renderD* entry"
	}
	sort.Strings(names)
	return "/dev/dri/" + names[0], ""
}

// kfdRenderMinor finds the KFD topology node at a PCI address and its drm_render_minor;
// 0 and where it looked when there is none.
func kfdRenderMinor(opts Options, pci string) (uint64, string) {
	dir := opts.path("sys", "class", "kfd", "kfd", "topology", "nodes")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, dir + ": " + shortErr(err)
	}
	for _, e := range ents {
		props, err := readProperties(filepath.Join(dir, e.Name(), "properties"))
		if err != nil || props["simd_count"] == 0 {
			continue
		}
		if _, ok := props["location_id"]; !ok || pciFromLocation(props["domain"], props["location_id"]) != pci {
			continue
		}
		if m := props["drm_render_minor"]; m > 0 {
			return m, ""
		}
		return 0, fmt.Sprintf("%s: node %s is at %s but its drm_render_minor is 0 or missing", dir, e.Name(), pci)
	}
	return 0, dir + ": no GPU node at " + pci
}

func shortErr(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each GPU of the recorded MI300X tree maps to its own render node, from the inventory
// (KFD's drm_render_minor), from the PCI device's drm folder, and from the KFD topology by
// PCI address; all three agree.
func TestRenderNodeOnTheRecordedMI300X(t *testing.T) {
	root, _ := filepath.Abs(fixtures + "/mi300x")
	opts := Options{SysfsRoot: root}
	inv, err := readKFD(opts)
	if err != nil {
		t.Fatal(err)
	}
	kfdOnly := Options{SysfsRoot: copyTree(t)}
	must(t, os.RemoveAll(filepath.Join(kfdOnly.SysfsRoot, "sys", "bus")))
	for i, g := range inv.GPUs {
		want := "/dev/dri/renderD" + []string{"128", "129", "130", "131", "132", "133", "135", "134"}[i] // GPUs 6 and 7 swapped: no renderD(128+index)
		bare := g
		bare.RenderNode = "" // as the amdsmi library gives it, without the KFD join
		for name, got := range map[string]func() (string, error){
			"inventory": func() (string, error) { return RenderNode(opts, g) },
			"pci drm":   func() (string, error) { return RenderNode(opts, bare) },
			"kfd":       func() (string, error) { return RenderNode(kfdOnly, bare) },
		} {
			r, err := got()
			if err != nil || r != want {
				t.Errorf("GPU %d by %s: %q %v, want %s", i, name, r, err, want)
			}
		}
	}
}

// A GPU whose render node cannot be found is an error naming the GPU and every place
// looked at, never "" (which would silently give a container no render node, or all).
func TestRenderNodeMissing(t *testing.T) {
	tree := copyTree(t)
	opts := Options{SysfsRoot: tree}
	g := GPU{Index: 4, PCIBusID: "0000:9f:00.0", NUMANode: -1}
	os.RemoveAll(filepath.Join(tree, "sys", "bus", "pci", "devices", g.PCIBusID, "drm"))
	props := filepath.Join(tree, "sys", "class", "kfd", "kfd", "topology", "nodes", "6", "properties")
	b, _ := os.ReadFile(props)
	os.WriteFile(props, []byte(strings.Replace(string(b), "drm_render_minor 132", "drm_render_minor 0", 1)), 0o644)

	_, err := RenderNode(opts, g)
	var re *RenderNodeError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *RenderNodeError", err)
	}
	for _, w := range []string{"AMD GPU 4 (0000:9f:00.0) has no render node", "devices/0000:9f:00.0/drm: does not exist",
		"topology/nodes: node 6 is at 0000:9f:00.0 but its drm_render_minor is 0"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	cases := []struct {
		g    GPU
		want string
	}{
		{GPU{Index: 1, PCIBusID: "0000:01:00.0"}, "topology/nodes: no GPU node at 0000:01:00.0"},
		{GPU{Index: 2}, "no PCI address"},
		{GPU{Index: 3, RenderNode: "/dev/dri/../../etc/passwd"}, "which is no /dev/dri/renderD<N>"},
	}
	for _, c := range cases {
		if _, err := RenderNode(opts, c.g); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.g, err, c.want)
		}
	}
	if _, err := RenderNode(Options{SysfsRoot: t.TempDir()}, GPU{PCIBusID: "0000:9f:00.0"}); err == nil ||
		!strings.Contains(err.Error(), "drm: does not exist") || !strings.Contains(err.Error(), "nodes: does not exist") {
		t.Errorf("empty tree: %v", err)
	}
}

// One lookup of a PCI device's render node serves the inventory (amd-smi, amdsmi) and
// RenderNode: only a renderD<N> entry counts, never another name that starts so.
func TestPCIRenderNodeTakesOnlyRenderDN(t *testing.T) {
	tree := t.TempDir()
	opts := Options{SysfsRoot: tree}
	drm := filepath.Join(tree, "sys", "bus", "pci", "devices", "0000:0c:00.0", "drm")
	must(t, os.MkdirAll(filepath.Join(drm, "renderDx"), 0o755))
	must(t, os.MkdirAll(filepath.Join(drm, "card1"), 0o755))
	if r := pciRenderNode(opts, "0000:0c:00.0"); r != "" {
		t.Errorf("renderDx: %q, want none", r)
	}
	if _, err := RenderNode(opts, GPU{Index: 0, PCIBusID: "0000:0c:00.0"}); err == nil {
		t.Error("RenderNode took renderDx")
	}
	must(t, os.MkdirAll(filepath.Join(drm, "renderD129"), 0o755))
	if r := pciRenderNode(opts, "0000:0c:00.0"); r != "/dev/dri/renderD129" {
		t.Errorf("renderD129: %q", r)
	}
}

package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/runner/gpupath"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

// The engine's facts and the way GPUs take are gpupath's; a run and doctor use them here.
type (
	EngineFacts = gpupath.EngineFacts
	GPUPath     = gpupath.GPUPath
)

// Engine names EngineFacts knows.
const (
	EngineDocker = gpupath.EngineDocker
	EnginePodman = gpupath.EnginePodman
)

// parenthesised is " (s)", or "" for "".
func parenthesised(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// gpuHost is where a node's GPU device files and groups are looked up.
type gpuHost struct {
	opts      gpu.Options // the root (a recorded tree in tests and the hidden --sysfs-root)
	groupFile string      // /etc/group: a recorded tree's groups, which has no /dev
	// statGID is the group owning a device file (nil: os.Stat); tests give it numbers.
	statGID func(path string) (uint32, error)
}

// amdDevices are /dev/kfd and the render nodes of the selected GPUs (gpu.RenderNode: a
// GPU without one is an error), and the groups owning them, by number: the gid of each
// device file (root's group left out), as the container's supplementary groups. Under a
// recorded tree without the device files, the video and render groups of groupFile.
func (h gpuHost) amdDevices(sel []gpu.GPU) ([]manifest.Device, []string, error) {
	paths := []string{"/dev/kfd"}
	owner := map[string]gpu.GPU{} // render node -> the GPU it was found for
	for _, g := range sel {
		r, err := gpu.RenderNode(h.opts, g)
		if err != nil {
			return nil, nil, &GPUError{Msg: err.Error()}
		}
		if o, ok := owner[r]; ok {
			return nil, nil, &GPUError{Msg: fmt.Sprintf("AMD %s and %s both have render node %s: each GPU has its own, so the node's inventory is stale or wrong "+
				"(compare /sys/class/kfd/kfd/topology/nodes/*/properties drm_render_minor with ls -l /sys/bus/pci/devices/*/drm)", gpuName(o), gpuName(g), r)}
		}
		owner[r] = g
		paths = append(paths, r)
	}
	devs := make([]manifest.Device, len(paths))
	for i, p := range paths {
		devs[i] = manifest.Device{Host: p, Container: p, Permissions: "rwm"}
	}
	stat := h.statGID
	if stat == nil {
		stat = fileGID
	}
	root := h.opts.SysfsRoot
	live := root == "" || root == "/"
	var gids []string
	for _, p := range paths {
		gid, err := stat(filepath.Join(rootOrSlash(root), p))
		if err != nil && live {
			return nil, nil, &GPUError{Msg: fmt.Sprintf("AMD GPU device file %s: %v; is the amdgpu driver loaded, and are the selected GPUs' render nodes there (ls -l /dev/kfd /dev/dri)?", p, err)}
		}
		if err != nil { // a recorded tree has no /dev: the groups by name, as ROCm's docs say
			return devs, namedGroups(h.groupFile), nil
		}
		if s := strconv.FormatUint(uint64(gid), 10); gid != 0 && !slices.Contains(gids, s) {
			gids = append(gids, s)
		}
	}
	return devs, gids, nil
}

// gpuName is "GPU 3 (0000:5c:00.0)" for messages.
func gpuName(g gpu.GPU) string {
	s := "GPU " + strconv.Itoa(g.Index)
	if g.PCIBusID != "" {
		s += " (" + g.PCIBusID + ")"
	}
	return s
}

func rootOrSlash(root string) string {
	if root == "" {
		return "/"
	}
	return root
}

func fileGID(path string) (uint32, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no owner known")
	}
	return st.Gid, nil
}

func namedGroups(groupFile string) []string {
	var gids []string
	for _, grp := range []string{"video", "render"} {
		if gid, ok := groupID(groupFile, grp); ok {
			gids = append(gids, gid)
		}
	}
	return gids
}

// ForEngine is the access as this engine wants it: NVIDIA GPUs as CDI devices or the
// NVIDIA device request (gpupath.NVIDIARequests, with the node's CDI specs), AMD GPUs' groups as
// they are, or, on rootless Podman, keep-groups (numbers would name the user namespace's
// groups, not the host's that own the device files; crun keeps the user's own), which
// Podman refuses beside any other group: groups, the other groups the container gets
// (containerGroups; whose says where they come from), are then an error.
func (a GPUAccess) ForEngine(f EngineFacts, specs gpu.CDISpecs, groups []string, whose string) (GPUAccess, GPUPath, error) {
	switch a.Vendor {
	case gpu.VendorNVIDIA:
		if a.planned {
			return a, GPUPath{Way: "nvidia device request", Why: "planned GPUs: the node that runs the job decides"}, nil
		}
		reqs, path, err := gpupath.NVIDIARequests(f, specs, a.GPUs)
		if err != nil {
			return a, path, err
		}
		a.Requests = reqs
		return a, path, nil
	case gpu.VendorAMD:
		path := GPUPath{Way: "device files", Why: "/dev/kfd and the selected GPUs' render nodes, with the groups that own them"}
		if f.Engine == EnginePodman && !f.InfoKnown {
			path.Why += "; Podman's /info could not be read" + parenthesised(f.InfoProblem) + ", so it is taken for rootful"
		}
		if f.Engine == EnginePodman && f.Rootless {
			if len(groups) > 0 {
				return a, path, &GPUError{Msg: fmt.Sprintf("%s %v cannot be used with AMD GPUs on rootless Podman: "+
					"the GPUs' device files need --group-add keep-groups, which Podman allows only alone; remove them "+
					"(container.groupAdd, --group-add in container.extraOptions or in a model's additional_docker_run_options)", whose, groups)}
			}
			a.GroupAdd = []string{"keep-groups"}
			path.Why = "/dev/kfd and the selected GPUs' render nodes, with keep-groups (rootless Podman: the user's own video/render groups; needs crun)"
		}
		return a, path, nil
	}
	return a, GPUPath{}, nil
}

// containerGroups are the groups a benchmark's container gets besides the GPUs' (b nil:
// the manifest's), and whose they are, for messages: a MAD model's
// additional_docker_run_options give its benchmark a container of its own (manifest's
// container.groupAdd and the model's --group-add).
func containerGroups(m *manifest.Manifest, b *manifest.Benchmark) ([]string, string) {
	if b != nil && b.Container != nil {
		return b.Container.GroupAdd, "benchmark " + b.Name + "'s groups (container.groupAdd and its model's additional_docker_run_options --group-add)"
	}
	return m.Container.GroupAdd, "container.groupAdd"
}

// benchGroups are containerGroups of benches[i], or the manifest's where benches has no i.
func benchGroups(m *manifest.Manifest, benches []manifest.Benchmark, i int) ([]string, string) {
	if i < len(benches) {
		return containerGroups(m, &benches[i])
	}
	return containerGroups(m, nil)
}

// factsTeller is what tells the engine's facts: a runtime (workload.Runtime), or the
// engine's Engine API itself (a dry run's engine: engine.Facts).
type factsTeller interface {
	Facts(ctx context.Context) (workload.Facts, error)
}

// apiFacts is an Engine API that tells its facts (engine.Facts: its version, its /info
// where it has one).
type apiFacts struct{ api engine.VersionAPI }

func (a apiFacts) Facts(ctx context.Context) (workload.Facts, error) { return engine.Facts(ctx, a.api) }

// engineFacts asks for the engine's facts.
func engineFacts(ctx context.Context, t factsTeller) (EngineFacts, error) {
	w, err := t.Facts(ctx)
	if err != nil {
		return EngineFacts{}, err
	}
	return gpupath.EngineFactsOf(w), nil
}

// engineGPUs gives the selected GPUs (and each benchmark's share) the devices the node's
// engine wants (ForEngine), and logs which way they take and why. An engine that does not
// say its version is taken for Docker without CDI: the NVIDIA device request, as before.
func (r *nodeRun) engineGPUs(ctx context.Context, eng factsTeller, g *nodeGPUs) error {
	if g.Vendor != gpu.VendorAMD && g.Vendor != gpu.VendorNVIDIA {
		return nil
	}
	f, err := engineFacts(ctx, eng)
	if err != nil {
		r.log.Warn("the engine did not say which it is: GPUs go to it as to Docker without CDI", "err", err)
		f = EngineFacts{Engine: EngineDocker}
	}
	f = f.WithIdentity(r.engine)
	var specs gpu.CDISpecs
	if g.Vendor == gpu.VendorNVIDIA {
		specs = gpupath.CDISpecsFor(f, r.o.SysfsRoot)
	}
	groups, whose := containerGroups(r.o.Manifest, nil)
	acc, path, err := g.ForEngine(f, specs, groups, whose)
	if err != nil {
		return err
	}
	g.GPUAccess = acc
	for i := range g.access { // g.access[i] is r.benches[i]'s
		groups, whose := benchGroups(r.o.Manifest, r.benches, i)
		if g.access[i], _, err = g.access[i].ForEngine(f, specs, groups, whose); err != nil {
			return err
		}
	}
	args := []any{"engine", f.String(), "way", path.Way, "why", path.Why}
	if len(path.SpecProblems) > 0 {
		args = append(args, "skippedSpecs", strings.Join(path.SpecProblems, "; "))
	}
	if len(path.SpecLinks) > 0 {
		args = append(args, "linkedSpecs", strings.Join(path.SpecLinks, "; "))
	}
	r.log.Info("gpu devices", args...)
	return nil
}

// GPUDevicesCheck is doctor's "gpu devices" line: which way this node's GPUs reach a
// container on its engine and why (each benchmark's groups checked as its run would), a
// skipped CDI spec each a line of its own. m nil is a manifest without groups.
func GPUDevicesCheck(f EngineFacts, acc GPUAccess, m *manifest.Manifest) []Check {
	if acc.Vendor != gpu.VendorAMD && acc.Vendor != gpu.VendorNVIDIA {
		return nil
	}
	if m == nil {
		m = &manifest.Manifest{}
	}
	var specs gpu.CDISpecs
	if acc.Vendor == gpu.VendorNVIDIA {
		specs = gpupath.CDISpecsFor(f, "")
	}
	groups, whose := containerGroups(m, nil)
	_, path, err := acc.ForEngine(f, specs, groups, whose)
	for i := 0; err == nil && i < len(m.Benchmarks); i++ {
		groups, whose := containerGroups(m, &m.Benchmarks[i])
		_, _, err = acc.ForEngine(f, specs, groups, whose)
	}
	var out []Check
	if err != nil {
		out = append(out, Check{Name: "gpu devices", Detail: err.Error(), Fix: "see docs/manifest.md, GPUs and engines"})
	} else {
		out = append(out, Check{Name: "gpu devices", OK: true, Detail: path.Way + " on " + f.String() + ": " + path.Why})
	}
	for _, l := range specs.Links {
		out = append(out, Check{Name: "cdi spec", OK: true, Detail: l})
	}
	for _, p := range specs.Problems {
		out = append(out, Check{Name: "cdi spec", Detail: "skipped: " + p, Fix: "regenerate it (sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml) or remove it"})
	}
	return out
}

// Check is one line of `benchctl doctor`.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	// Record is this node's record, on the "node record" line only (doctor -o json).
	Record *jobdir.NodeRecord `json:"record,omitempty"`
}

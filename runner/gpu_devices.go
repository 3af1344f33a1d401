package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

// Engine names EngineFacts knows.
const (
	EngineDocker = "docker"
	EnginePodman = "podman"
)

// EngineFacts is what the way GPUs reach a container depends on: which engine answered,
// its version, its Engine API version, whether it runs rootless, and the CDI spec folders
// it reports. EngineFactsOf reads them from the version and info answers.
type EngineFacts struct {
	Engine      string   // docker or podman
	Version     string   // the engine's own: Docker 27.3.1, Podman 4.3.1
	APIVersion  string   // the Engine API version it speaks (Podman: its compat API's)
	Rootless    bool     // /info's security options say name=rootless
	CDISpecDirs []string // Docker's /info (API 1.44+); empty when its CDI is off or unknown
	InfoKnown   bool     // /info answered: Rootless and CDISpecDirs are facts
	InfoProblem string   // why /info did not answer, where it was asked and failed
}

// EngineFactsOf are the facts of the engine as its runtime tells them (workload.Facts):
// Podman names its component "Podman Engine" (its version is the component's); Docker
// "Engine".
func EngineFactsOf(w workload.Facts) EngineFacts {
	f := EngineFacts{Engine: EngineDocker, Version: w.Version, APIVersion: w.APIVersion}
	for _, c := range w.Components {
		if strings.EqualFold(c.Name, "Podman Engine") {
			f.Engine, f.Version = EnginePodman, c.Version
		}
	}
	if w.InfoKnown {
		f.InfoKnown, f.Rootless, f.CDISpecDirs = true, w.Rootless, slices.Clone(w.CDISpecDirs)
	}
	f.InfoProblem = w.InfoProblem
	return f
}

func (f EngineFacts) String() string {
	s := "Docker " + f.Version
	if f.Engine == EnginePodman {
		s = "Podman " + f.Version
	}
	if f.Rootless {
		s += " (rootless)"
	}
	return s + ", Engine API " + f.APIVersion
}

// GPUPath is how the selected GPUs reach a container on this node, and why.
type GPUPath struct {
	Way string // "cdi", "nvidia device request" or "device files"
	Why string
	// SpecProblems are the CDI spec files that were skipped (NVIDIA), for the log and doctor.
	SpecProblems []string
	// SpecLinks are the CDI spec files read through a link, and where it leads.
	SpecLinks []string
}

// Podman's compat API takes CDI devices in DeviceRequests (driver "cdi") from 5.4.0
// (containers/podman#25171); before, and for every other driver, it drops DeviceRequests
// (containers/podman#22645). Docker takes them from Engine API 1.44 (Docker 25) when its
// daemon has CDI on (/info's CDISpecDirs is empty while it is off).
const (
	podmanCDIMajor, podmanCDIMinor  = 5, 4
	dockerCDIAPIMajor, dockerCDIAPI = 1, 44
)

// NVIDIARequests decides how the selected NVIDIA GPUs reach a container on this engine:
// CDI devices (nvidia.com/gpu=<UUID, else index>, one per GPU) when the engine takes CDI
// through the Engine API and the node's CDI specs name every selected GPU; else the NVIDIA
// device request (driver nvidia, the GPUs' UUIDs). Podman drops the NVIDIA device request,
// so there no CDI is a *GPUError saying what to change, not a container without GPUs.
func NVIDIARequests(f EngineFacts, specs gpu.CDISpecs, sel []gpu.GPU) ([]workload.GPURequest, GPUPath, error) {
	path := GPUPath{SpecProblems: specs.Problems, SpecLinks: specs.Links}
	where := strings.Join(specs.Dirs, ", ")
	cdi, badSpec := cdiNames(specs, sel, where)
	var whyNot string
	switch {
	case f.Engine == EnginePodman && !versionAtLeast(f.Version, podmanCDIMajor, podmanCDIMinor):
		whyNot = fmt.Sprintf("Podman %s takes CDI devices through the Engine API only from %d.%d", f.Version, podmanCDIMajor, podmanCDIMinor)
	case f.Engine != EnginePodman && !versionAtLeast(f.APIVersion, dockerCDIAPIMajor, dockerCDIAPI):
		whyNot = fmt.Sprintf("Engine API %s has no CDI devices (1.%d, Docker 25, added them)", f.APIVersion, dockerCDIAPI)
	case f.Engine != EnginePodman && !f.InfoKnown:
		whyNot = "the engine's /info could not be read" + parenthesised(f.InfoProblem) + ", so whether its CDI is on is not known"
	case f.Engine != EnginePodman && len(f.CDISpecDirs) == 0:
		whyNot = "the Docker daemon's CDI is off (its /info lists no CDI spec folders; Docker 25-27 turn it on with \"features\": {\"cdi\": true} in daemon.json, 28 and later have it on)"
	case badSpec != "":
		whyNot = badSpec
	}
	if whyNot == "" {
		path.Way, path.Why = "cdi", "CDI devices: "+f.String()+" takes them and the specs in "+where+" name every selected GPU"
		return []workload.GPURequest{{Driver: "cdi", DeviceIDs: cdi}}, path, nil
	}
	if f.Engine == EnginePodman {
		fix := "generate a CDI spec on this node (sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)"
		if !versionAtLeast(f.Version, podmanCDIMajor, podmanCDIMinor) {
			fix = fmt.Sprintf("upgrade Podman to %d.%d or later and give it a CDI spec (nvidia-ctk cdi generate), or run NVIDIA jobs on Docker", podmanCDIMajor, podmanCDIMinor)
		}
		return nil, path, &GPUError{Msg: "NVIDIA GPUs cannot reach a Podman container here: " + whyNot +
			", and Podman's Engine API drops the NVIDIA device request (the container would start without GPUs); " + fix}
	}
	ids := make([]string, len(sel))
	for i, g := range sel {
		ids[i] = nvidiaID(g)
	}
	path.Way, path.Why = "nvidia device request", "the NVIDIA device request (NVIDIA Container Toolkit's runtime hook): "+whyNot
	return []workload.GPURequest{{Driver: "nvidia", DeviceIDs: ids, Capabilities: [][]string{{"gpu"}}}}, path, nil
}

// parenthesised is " (s)", or "" for "".
func parenthesised(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// cdiNames are the CDI names of the selected GPUs, by UUID where a spec names the UUID,
// else by index; else why not (where: the spec folders): no spec names a GPU, or the spec's
// device file for it is not the GPU's (a stale spec, GPUs renumbered since it was written).
func cdiNames(specs gpu.CDISpecs, sel []gpu.GPU, where string) ([]string, string) {
	out := make([]string, 0, len(sel))
	for _, g := range sel {
		byUUID := gpu.NVIDIACDIKind + "=" + g.UUID
		byIndex := gpu.NVIDIACDIKind + "=" + strconv.Itoa(g.Index)
		var name string
		switch {
		case g.UUID != "" && specs.Has(byUUID):
			name = byUUID
		case specs.Has(byIndex):
			name = byIndex
		default:
			return nil, "no CDI spec in " + where + " names " + gpuID(g) + " (kind " + gpu.NVIDIACDIKind + ")"
		}
		if want, got := nvidiaNode(g.Devices), nvidiaNode(specs.DeviceNodes[name]); want != "" && got != want {
			if got == "" {
				got = "no /dev/nvidia<N>"
			}
			return nil, fmt.Sprintf("the CDI spec %s gives %s %s, but %s is %s: the spec is stale (regenerate it: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)",
				specs.Devices[name], name, got, gpuID(g), want)
		}
		out = append(out, name)
	}
	return out, ""
}

var nvidiaNodeRE = regexp.MustCompile(`^/dev/nvidia[0-9]+$`)

// nvidiaNode is the one /dev/nvidia<N> of a GPU's device files ("" for none or several).
func nvidiaNode(devs []string) string {
	var found string
	for _, d := range devs {
		if nvidiaNodeRE.MatchString(d) {
			if found != "" {
				return ""
			}
			found = d
		}
	}
	return found
}

// gpuID is "GPU 3 (GPU-<uuid>)" for messages.
func gpuID(g gpu.GPU) string {
	who := "GPU " + strconv.Itoa(g.Index)
	if g.UUID != "" {
		who += " (" + g.UUID + ")"
	}
	return who
}

// nvidiaID is how the NVIDIA device request and NVIDIA_VISIBLE_DEVICES name a GPU.
func nvidiaID(g gpu.GPU) string {
	if g.UUID != "" {
		return g.UUID
	}
	return strconv.Itoa(g.Index)
}

// versionAtLeast compares the first two numbers of "5.4.0-rc1", "28.0.1" or "1.44".
func versionAtLeast(v string, major, minor int) bool {
	a, b, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".")
	b, _, _ = strings.Cut(b, ".")
	b = strings.TrimRightFunc(b, func(r rune) bool { return r < '0' || r > '9' })
	ma, err1 := strconv.Atoi(a)
	mi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
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
// NVIDIA device request (NVIDIARequests, with the node's CDI specs), AMD GPUs' groups as
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
		reqs, path, err := NVIDIARequests(f, specs, a.GPUs)
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
	return EngineFactsOf(w), nil
}

// FactsOfIdentity are the facts of an engine image.Identify named, with its /info answer
// when not nil (CDI's folders).
func FactsOfIdentity(id image.Identity, info *workload.Facts) EngineFacts {
	f := EngineFacts{Engine: EngineDocker, APIVersion: id.APIVersion}
	if info != nil {
		f = EngineFactsOf(workload.Facts{InfoKnown: info.InfoKnown, InfoProblem: info.InfoProblem, Rootless: info.Rootless, CDISpecDirs: info.CDISpecDirs})
		f.APIVersion = id.APIVersion
	}
	return f.withIdentity(id)
}

// withIdentity takes which engine it is, its version and whether it runs rootless from
// image.Identify, which asks Podman's own API: Podman's Docker-compatible /info does not
// name rootless in its security options, so the facts alone took a rootless Podman for
// a rootful one (no keep-groups for AMD's device groups).
func (f EngineFacts) withIdentity(id image.Identity) EngineFacts {
	if id.Kind == "" {
		return f
	}
	f.Engine, f.Rootless = EngineDocker, f.Rootless || id.Rootless
	if id.Podman() {
		f.Engine = EnginePodman
	}
	if id.Version != "" {
		f.Version = id.Version
	}
	if id.APIVersion != "" {
		f.APIVersion = id.APIVersion
	}
	return f
}

// cdiSpecsFor reads the node's CDI specs from the folders this engine reads.
func cdiSpecsFor(f EngineFacts, root string) gpu.CDISpecs {
	dirs := gpu.CDISpecDirs
	if f.Engine != EnginePodman && len(f.CDISpecDirs) > 0 {
		dirs = f.CDISpecDirs
	}
	return gpu.ReadCDISpecs(root, dirs)
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
	f = f.withIdentity(r.engine)
	var specs gpu.CDISpecs
	if g.Vendor == gpu.VendorNVIDIA {
		specs = cdiSpecsFor(f, r.o.SysfsRoot)
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
		specs = cdiSpecsFor(f, "")
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

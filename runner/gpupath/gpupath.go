package gpupath

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/workload"
)

// GPUError is a GPU request this node cannot satisfy (invalid input for this node).
type GPUError struct {
	Msg string
	// Absent: the node has none of the manifest's GPUs (none found, or the vendor's library
	// is missing), as on a login node; else the node has GPUs and the request does not fit
	// them (too many asked, a visibility variable naming others).
	Absent bool
}

func (e *GPUError) Error() string      { return e.Msg }
func (e *GPUError) InvalidInput() bool { return true }

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
		ids[i] = NVIDIAID(g)
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

// NVIDIAID is how the NVIDIA device request and NVIDIA_VISIBLE_DEVICES name a GPU.
func NVIDIAID(g gpu.GPU) string {
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

// FactsOfIdentity are the facts of an engine image.Identify named, with its /info answer
// when not nil (CDI's folders).
func FactsOfIdentity(id image.Identity, info *workload.Facts) EngineFacts {
	f := EngineFacts{Engine: EngineDocker, APIVersion: id.APIVersion}
	if info != nil {
		f = EngineFactsOf(workload.Facts{InfoKnown: info.InfoKnown, InfoProblem: info.InfoProblem, Rootless: info.Rootless, CDISpecDirs: info.CDISpecDirs})
		f.APIVersion = id.APIVersion
	}
	return f.WithIdentity(id)
}

// WithIdentity takes which engine it is, its version and whether it runs rootless from
// image.Identify, which asks Podman's own API: Podman's Docker-compatible /info does not
// name rootless in its security options, so the facts alone took a rootless Podman for
// a rootful one (no keep-groups for AMD's device groups).
func (f EngineFacts) WithIdentity(id image.Identity) EngineFacts {
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

// CDISpecsFor reads the node's CDI specs from the folders this engine reads.
func CDISpecsFor(f EngineFacts, root string) gpu.CDISpecs {
	dirs := gpu.CDISpecDirs
	if f.Engine != EnginePodman && len(f.CDISpecDirs) > 0 {
		dirs = f.CDISpecDirs
	}
	return gpu.ReadCDISpecs(root, dirs)
}

package manifest

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Where a manifest's benchmarks run (Manifest.Runtime).
const (
	// RuntimeEngine runs each benchmark in a container of a Docker or Podman engine, through
	// its API: the default.
	RuntimeEngine = "engine"
	// RuntimeProcess runs each benchmark as a child process of benchctl, on the node as it is
	// (bare metal, or inside a container someone else started: pyxis, enroot, Apptainer, a
	// Kubernetes pod).
	RuntimeProcess = "process"
)

// Runtimes are the runtimes a manifest may name, in the order docs list them.
var Runtimes = []string{RuntimeEngine, RuntimeProcess}

// Process reports whether the benchmarks run as processes (runtime: process).
func (m *Manifest) Process() bool { return m.Runtime == RuntimeProcess }

// Refusal is a setting that has no meaning for a runtime: Field is its path in the
// manifest, Msg what is wrong and what to do instead.
type Refusal struct {
	Field string
	Msg   string
}

func (r Refusal) String() string { return r.Field + ": " + r.Msg }

// launcherHint is where what a process runtime cannot give is given instead.
const launcherHint = "give it where the node's environment is made: srun --container-mounts (pyxis), enroot's mounts, apptainer --bind, or the pod's volumes"

// ProcessRefusals are the settings of m that have no meaning without a container engine,
// each with what to do instead: an image built from a Dockerfile (an image.ref is what the
// user says the environment is, and is kept), mounts other than identity ones, container
// options other than ulimits, an engine, a distribution. None: m can run as processes.
func (m *Manifest) ProcessRefusals() []Refusal {
	var out []Refusal
	image := func(field string, img *Image) {
		if img != nil && img.Builds() {
			out = append(out, Refusal{field + ".dockerfile", "the process runtime builds no image: run where the environment is made (a pyxis or Apptainer image) and give image.ref as its name, or drop image"})
		}
	}
	image("image", &m.Image)
	mounts := func(field string, ms []Mount) {
		for i, mt := range ms {
			if filepath.Clean(mt.Source) != filepath.Clean(mt.Target) {
				out = append(out, Refusal{field + "[" + strconv.Itoa(i) + "]", fmt.Sprintf("%s:%s: a process sees the node's own files, so only a mount of a path onto itself has meaning; %s", mt.Source, mt.Target, launcherHint)})
			}
		}
	}
	mounts("mounts", m.Mounts)
	container := func(field string, c Container) {
		say := func(name, msg string) { out = append(out, Refusal{field + "." + name, msg}) }
		if c.Network != "" && c.Network != "host" {
			say("network", c.Network+": a process uses the node's network")
		}
		if c.IPC != "" && c.IPC != "host" {
			say("ipc", c.IPC+": a process shares the node's IPC")
		}
		if c.ShmSize != 0 {
			say("shmSize", "a process uses the node's /dev/shm")
		}
		if c.User != "" {
			say("user", "a process runs as benchctl's user: run benchctl as the user you want")
		}
		if len(c.CapAdd) > 0 {
			say("capAdd", "a process has benchctl's privileges")
		}
		if len(c.Devices) > 0 {
			say("devices", "a process sees the node's devices; "+launcherHint)
		}
		if len(c.SecurityOpt) > 0 {
			say("extraOptions", "--security-opt: a process has benchctl's confinement")
		}
		if len(c.GroupAdd) > 0 {
			say("extraOptions", "--group-add: a process has benchctl's groups")
		}
	}
	container("container", m.Container)
	for i, b := range m.Benchmarks {
		if b.Model != nil && b.Model.Catalog != "" {
			// A MAD model's Dockerfile and docker options are its catalog's recipe for the
			// environment, which a process runs in already (the launcher made it): the runner
			// says what it does not apply (CatalogProcessNotes). The user's own settings
			// (the manifest's, --context's) are checked above.
			continue
		}
		field := "benchmarks[" + strconv.Itoa(i) + "]"
		image(field+".image", b.Image)
		if b.Container != nil {
			container(field+".container", *b.Container)
			mounts(field+".mounts", b.Mounts)
		}
	}
	if m.Engine != "" {
		out = append(out, Refusal{"engine", m.Engine + ": the process runtime uses no container engine; drop engine"})
	}
	if m.Distribution != "" && m.Distribution != DistributionAuto {
		out = append(out, Refusal{"distribution", m.Distribution + ": the process runtime distributes no image; drop distribution"})
	}
	return out
}

// SetRuntime makes the benchmarks run on runtime (a command's --runtime over the manifest's
// runtime:), checked as the manifest's own would be: with process, what has no meaning
// without an engine is refused; with engine, every benchmark needs an image. A refusal is
// invalid input (exit 4) naming each field.
func (m *Manifest) SetRuntime(runtime string) error {
	var problems []string
	switch runtime {
	case RuntimeProcess:
		for _, r := range m.ProcessRefusals() {
			problems = append(problems, r.String())
		}
	case RuntimeEngine:
		for _, b := range m.Benchmarks {
			if !m.ImageOf(b).Given() {
				problems = append(problems, "image: benchmark "+b.Name+" has none, and runtime engine runs every benchmark in an image (give image.ref or image.dockerfile)")
			}
		}
	default:
		return &RuntimeError{Runtime: runtime, Problems: []string{fmt.Sprintf("%q is not a runtime benchctl knows (allowed: engine, process)", runtime)}}
	}
	if len(problems) > 0 {
		return &RuntimeError{Runtime: runtime, Problems: problems}
	}
	m.Runtime = runtime
	return nil
}

// RuntimeError is a manifest that cannot run on the runtime a command asks for.
type RuntimeError struct {
	Runtime  string
	Problems []string
}

func (e *RuntimeError) Error() string {
	if len(e.Problems) == 1 {
		return "--runtime " + e.Runtime + ": " + e.Problems[0]
	}
	msg := fmt.Sprintf("--runtime %s: %d problems:", e.Runtime, len(e.Problems))
	for _, p := range e.Problems {
		msg += "\n  " + p
	}
	return msg
}

// InvalidInput makes it exit 4.
func (e *RuntimeError) InvalidInput() bool { return true }

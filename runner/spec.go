package runner

import (
	"encoding/csv"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/runner/workspace"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/cleanup"
	"github.com/benchctl/benchctl/workload"
)

// OutputDir is where a benchmark's results folder is mounted in its container.
const OutputDir = manifest.ReservedMountRoot + "/output"

// Labels set on every benchctl container (a job's are cleanup's: it finds the containers
// by them).
const (
	LabelJob       = cleanup.LabelJob
	LabelAttempt   = cleanup.LabelAttempt
	LabelRank      = cleanup.LabelRank
	LabelBenchmark = cleanup.LabelBenchmark
	LabelKey       = "io.benchctl.key"
)

// Spec is everything needed to create one benchmark container.
type Spec struct {
	Name      string
	Image     string
	Command   []string
	Workdir   string
	Env       []manifest.EnvVar // sorted by name; Secret values are never printed
	Mounts    []manifest.Mount
	Container manifest.Container
	GPU       GPUAccess
	Labels    map[string]string
	Tools     *toolRun // the tools the command runs under (nil: none)
	// Engine is the engine the container is made in (its differences from Docker's are
	// handled when it is created: podman.AdaptToEngine).
	Engine image.Identity
	// UserNS is the container's user namespace mode where benchctl sets one (rootless
	// Podman's keep-id for a container user that is not root: podman.KeepIDMode); "" the engine's.
	UserNS string
	// Workspace is the container path of a MAD model's workspace (manifest.ModelWorkspace) when
	// the model runs in one of its node's own; "" for another benchmark.
	Workspace string
	// Output is where the benchmark sees its results folder: OutputDir in a container, the
	// folder itself for a process (RunDirs.Output).
	Output string
}

// RunDirs are the host folders of one benchmark run: its results folder (mounted at
// OutputDir) and, for a MAD model, its workspace (mounted at manifest.ModelWorkspace; "" for
// another benchmark, or where none is made, as in a plan).
type RunDirs struct {
	Results   string
	Workspace string
	// Output is where the benchmark sees Results: "" for OutputDir (a container's mount);
	// Results itself for a process, which sees the node's files as they are.
	Output string
}

// GPUAccess is how a container gets this node's GPUs.
type GPUAccess struct {
	GPUs     []gpu.GPU         // the selected GPUs
	System   []gpu.GPU         // every GPU of the node (MAD_SYSTEM_*)
	Vendor   string            // amd, nvidia or none
	Devices  []manifest.Device // AMD: /dev/kfd and the selected GPUs' render nodes
	GroupAdd []string          // AMD: the device files' group ids (rootless Podman: keep-groups)
	Requests []workload.GPURequest
	Env      []manifest.EnvVar // visibility variables
	Runtime  string            // the node's ROCm or CUDA version from its inventory; "" if unknown

	host    gpuHost // where the AMD device files and groups were looked up
	planned bool    // a dry run's GPUs, not this node's (plannedGPUs)
}

var containerNameRE = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// ContainerName is benchctl-<job>-<attempt>-r<rank>-<benchmark>, made safe for the engine.
func ContainerName(n Node, benchmark string) string {
	name := fmt.Sprintf("benchctl-%s-%d-r%d-%s", n.JobID, n.Attempt, n.Rank, benchmark)
	return containerNameRE.ReplaceAllString(name, "_")
}

// BuildSpec assembles a benchmark's container. Environment precedence, lowest first:
// pass-through host variables (passEnv globs; never BENCHCTL_*, nor the host's GPU
// numbering, hostNumbered, when benchctl gives the container GPUs), the manifest's env, the benchmark's env,
// secrets from the host, then the variables benchctl derives (which a manifest cannot set).
func BuildSpec(m *manifest.Manifest, b manifest.Benchmark, n Node, imageRef, key, resultsDir string, gpu GPUAccess, environ []string) Spec {
	return BuildSpecAt(m, b, n, imageRef, key, RunDirs{Results: resultsDir}, gpu, environ)
}

// BuildSpecAt is BuildSpec with a MAD model's workspace: dirs.Workspace is mounted at
// /myworkspace instead of any mount the manifest has there, and the checkout read-only
// at CheckoutMount, where the workspace's links lead (workspace.Make).
func BuildSpecAt(m *manifest.Manifest, b manifest.Benchmark, n Node, imageRef, key string, dirs RunDirs, gpu GPUAccess, environ []string) Spec {
	resultsDir, outputDir := dirs.Results, OutputDir
	if dirs.Output != "" {
		outputDir = dirs.Output
	}
	env := map[string]manifest.EnvVar{}
	givesGPUs := gpu.Vendor == manifest.VendorAMD || gpu.Vendor == manifest.VendorNVIDIA
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.HasPrefix(k, "BENCHCTL_") {
			// benchctl's own variables stay on the host, whatever the globs say: among them
			// is BENCHCTL_JOB_SECRET, the barrier's key.
			continue
		}
		if givesGPUs && slices.Contains(hostNumbered, k) {
			continue // the host's GPU numbers; the container's are gpu.Env's
		}
		for _, g := range m.PassEnv {
			if ok, _ := path.Match(g, k); ok {
				env[k] = manifest.EnvVar{Name: k, Value: v}
			}
		}
	}
	for k, v := range toolEnv(m.ToolDefs) { // madengine's tools' env_vars: below the manifest's env
		env[k] = v
	}
	for _, e := range m.Env {
		env[e.Name] = e
	}
	for _, e := range b.Env {
		env[e.Name] = e
	}
	hostEnv := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			hostEnv[k] = v
		}
	}
	for _, e := range madSecrets(b, hostEnv) {
		env[e.Name] = e
	}
	for _, s := range m.Secrets {
		if strings.HasPrefix(s, "BENCHCTL_") { // Load refuses these; the job secret never goes in
			continue
		}
		if v, ok := hostEnv[s]; ok {
			env[s] = manifest.EnvVar{Name: s, Value: v, Secret: true}
		}
	}
	derived := map[string]string{
		"NODE_RANK": strconv.Itoa(n.Rank), "NNODES": strconv.Itoa(n.World), "WORLD_SIZE": strconv.Itoa(n.World),
		"MASTER_ADDR": n.MasterAddr, "MASTER_PORT": strconv.Itoa(n.MasterPort), "BENCHCTL_OUTPUT_DIR": outputDir,
		"BENCHCTL_JOB_ID": n.JobID, "BENCHCTL_ATTEMPT": strconv.Itoa(n.Attempt), "BENCHCTL_BENCHMARK": b.Name,
	}
	mad, launcherDefaults := madEnv(b, n, gpu)
	for k, v := range mad {
		derived[k] = v
	}
	for k, v := range launcherDefaults {
		if _, set := env[k]; !set {
			env[k] = manifest.EnvVar{Name: k, Value: v}
		}
	}
	for k, v := range derived {
		env[k] = manifest.EnvVar{Name: k, Value: v}
	}
	for _, e := range gpu.Env {
		env[e.Name] = e
	}
	ctr, mounts := m.Container, m.Mounts
	if b.Container != nil { // a MAD model's additional_docker_run_options
		ctr, mounts = *b.Container, b.Mounts
	}
	s := Spec{Name: ContainerName(n, b.Name), Image: imageRef, Command: b.Command, Workdir: b.Workdir,
		Container: ctr, GPU: gpu, Output: outputDir,
		Labels: map[string]string{LabelJob: n.JobID, LabelAttempt: strconv.Itoa(n.Attempt), LabelRank: strconv.Itoa(n.Rank),
			LabelBenchmark: b.Name, LabelKey: key}}
	for _, e := range env {
		s.Env = append(s.Env, e)
	}
	sort.Slice(s.Env, func(i, j int) bool { return s.Env[i].Name < s.Env[j].Name })
	if dirs.Workspace != "" && workspace.In(b) {
		mounts = workspace.Mounts(b, mounts, dirs.Workspace)
		s.Workspace = manifest.ModelWorkspace
	}
	s.Mounts = append(madDataMounts(b, mounts), manifest.Mount{Source: resultsDir, Target: outputDir})
	return withTools(s, m.ToolDefs)
}

// Process is the spec as the runtime makes it (workload.Spec): the environment written out,
// the GPUs' devices, groups and requests joined to the manifest's.
func (s Spec) Process() workload.Spec {
	env := make([]string, len(s.Env))
	for i, e := range s.Env {
		env[i] = e.Name + "=" + e.Value
	}
	return workload.Spec{Name: s.Name, Image: s.Image, Command: slices.Clone(s.Command), Workdir: s.Workdir, Env: env,
		Labels: s.Labels, User: s.Container.User, Mounts: slices.Clone(s.Mounts),
		Devices:     append(append([]manifest.Device{}, s.Container.Devices...), s.GPU.Devices...),
		GPURequests: slices.Clone(s.GPU.Requests),
		GroupAdd:    append(append([]string{}, s.GPU.GroupAdd...), s.Container.GroupAdd...),
		Network:     s.Container.Network, IPC: s.Container.IPC, ShmSize: s.Container.ShmSize,
		CapAdd: s.Container.CapAdd, SecurityOpt: s.Container.SecurityOpt, UserNS: s.UserNS,
		Ulimits: slices.Clone(s.Container.Ulimits)}
}

// DockerRun renders the spec as an equivalent `docker run` command line, for --dry-run and
// messages. Secret values are shown as ***. It is for people to read, never executed.
func (s Spec) DockerRun() string {
	a := []string{"docker", "run", "--rm", "--name", s.Name, "--network", s.Container.Network, "--ipc", s.Container.IPC}
	if s.Container.ShmSize > 0 {
		a = append(a, "--shm-size", strconv.FormatInt(s.Container.ShmSize, 10))
	}
	if s.Container.User != "" {
		a = append(a, "--user", s.Container.User)
	}
	if s.UserNS != "" {
		a = append(a, "--userns", s.UserNS)
	}
	for _, c := range s.Container.CapAdd {
		a = append(a, "--cap-add", c)
	}
	for _, g := range append(append([]string{}, s.GPU.GroupAdd...), s.Container.GroupAdd...) {
		a = append(a, "--group-add", g)
	}
	for _, o := range s.Container.SecurityOpt {
		a = append(a, "--security-opt", o)
	}
	for _, d := range append(append([]manifest.Device{}, s.Container.Devices...), s.GPU.Devices...) {
		a = append(a, "--device", d.Host+":"+d.Container+":"+d.Permissions)
	}
	for _, r := range s.GPU.Requests {
		if r.Driver == "cdi" { // docker run --device takes CDI names (Docker 25+, Podman)
			for _, id := range r.DeviceIDs {
				a = append(a, "--device", id)
			}
			continue
		}
		if r.Count < 0 {
			a = append(a, "--gpus", "all")
		} else if len(r.DeviceIDs) > 0 {
			a = append(a, "--gpus", `"device=`+strings.Join(r.DeviceIDs, ",")+`"`)
		} else {
			a = append(a, "--gpus", strconv.Itoa(r.Count))
		}
	}
	for _, u := range s.Container.Ulimits {
		a = append(a, "--ulimit", fmt.Sprintf("%s=%d:%d", u.Name, u.Soft, u.Hard))
	}
	for _, m := range s.Mounts {
		a = append(a, mountFlag(m)...)
	}
	for _, e := range s.Env {
		v := e.Value
		if e.Secret {
			v = manifest.Redacted
		}
		a = append(a, "-e", e.Name+"="+v)
	}
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a = append(a, "--label", k+"="+s.Labels[k])
	}
	if s.Workdir != "" {
		a = append(a, "-w", s.Workdir)
	}
	a = append(a, "--entrypoint", s.Command[0], s.Image)
	a = append(a, s.Command[1:]...)
	for i, w := range a {
		a[i] = shellQuote(w)
	}
	return strings.Join(a, " ")
}

// mountFlag is a bind mount as docker run flags: -v SRC:DST[:ro], or --mount when a path
// holds a ':' or ',' that -v would split on (its fields CSV-quoted, as docker parses them).
func mountFlag(m manifest.Mount) []string {
	if !strings.ContainsAny(m.Source+m.Target, ":,\"\n") {
		v := m.Source + ":" + m.Target
		if m.ReadOnly {
			v += ":ro"
		}
		return []string{"-v", v}
	}
	fields := []string{"type=bind", "source=" + m.Source, "target=" + m.Target}
	if m.ReadOnly {
		fields = append(fields, "readonly")
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(fields) // a strings.Builder does not fail
	w.Flush()
	return []string{"--mount", strings.TrimSuffix(b.String(), "\n")}
}

// shellQuote quotes a word so that a POSIX shell reads it back as exactly that word, and
// so the printed line can be pasted into a shell and runs the same argv. A word of only
// letters, digits and - _ . / : = , @ % + (none of which a shell treats specially) stays
// bare, unless it starts with '=' (zsh expands =cmd to a path); any other word, the empty
// word included, is put in single quotes, inside which a shell treats nothing specially
// (globs * ? [ ], $, `, \, ", blanks, newlines, ; & | < > ( ) { } ~ # ! alike); a single
// quote in it ends the quoting, is escaped (\') and the quoting starts again.
func shellQuote(s string) string {
	if s != "" && s[0] != '=' && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package manifest

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/manifest/figures"
	"github.com/benchctl/benchctl/manifest/kubernetes"

	"github.com/benchctl/benchctl/internal/shellwords"
	"github.com/benchctl/benchctl/internal/textredact"
)

// Manifest is a resolved manifest: every path absolute, every ${VAR} expanded, defaults
// filled and mounts de-duplicated. It holds secret values in memory (EnvVar.Secret); print or
// persist only Redacted() copies.
type Manifest struct {
	Name       string           `json:"name" yaml:"name"`
	Path       string           `json:"path" yaml:"path"`
	Digest     string           `json:"digest" yaml:"digest"` // sha256 of the manifest file's bytes
	Image      Image            `json:"image" yaml:"image"`
	GPU        GPU              `json:"gpu" yaml:"gpu"`
	Mounts     []Mount          `json:"mounts" yaml:"mounts"`
	Env        []EnvVar         `json:"env" yaml:"env"`
	PassEnv    []string         `json:"passEnv" yaml:"passEnv"`
	Secrets    []string         `json:"secrets" yaml:"secrets"`
	Container  Container        `json:"container" yaml:"container"`
	Benchmarks []Benchmark      `json:"benchmarks" yaml:"benchmarks"`
	Models     *Models          `json:"models,omitempty" yaml:"models,omitempty"`
	Slurm      Slurm            `json:"slurm" yaml:"slurm"`
	Kubernetes kubernetes.Block `json:"kubernetes" yaml:"kubernetes"`
	Job        Job              `json:"job" yaml:"job"`
	LogScan    LogScan          `json:"logScan" yaml:"logScan"`
	// Distribution is how images reach the nodes (Distribution* constants; "" is auto).
	Distribution string `json:"distribution,omitempty" yaml:"distribution,omitempty"`
	// Engine is the container engine asked for (EngineDocker, EnginePodman; "": whichever
	// DOCKER_HOST names).
	Engine string `json:"engine,omitempty" yaml:"engine,omitempty"`
	// Runtime is where the benchmarks run (RuntimeEngine, RuntimeProcess; "": the engine).
	Runtime string `json:"runtime,omitempty" yaml:"runtime,omitempty"`
	// Experiment, when the manifest has one, is its variants and trials; nil: one variant
	// (the benchmarks as written), one trial.
	Experiment *Experiment `json:"experiment,omitempty" yaml:"experiment,omitempty"`
	// Metrics are the manifest's rules for judging metrics, in order (first match wins).
	Metrics []MetricRule `json:"metrics,omitempty" yaml:"metrics,omitempty"`
	// Telemetry is how the nodes sample their GPUs while a benchmark runs.
	Telemetry Telemetry `json:"telemetry" yaml:"telemetry"`
	// Tools are the names of the tools the benchmarks run under, in the order given.
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	// ToolDefs are those tools resolved from their tools.json (models.ApplyTools), in the
	// same order; empty until then.
	ToolDefs []Tool `json:"toolDefs,omitempty" yaml:"toolDefs,omitempty"`
	// ToolContext is what a MAD checkout run's --context says of tools (models.ApplyTools
	// applies it); nil for a manifest.
	ToolContext *ToolContext `json:"-" yaml:"-"`
}

// How images reach the nodes (Manifest.Distribution).
const (
	// DistributionAuto is the default: under Slurm, rank 0 streams an image the shared
	// cache lacks (writing the cache entry as it streams) or that not every node could load
	// from the cache (the shared directory is not shared by all); the other nodes load a
	// cached image from the cache. Without Slurm's node list: as cache.
	DistributionAuto = "auto"
	// DistributionCache: rank 0 builds, or pulls, each image once and publishes it to the
	// shared cache; the other nodes load it from there.
	DistributionCache = "cache"
	// DistributionRegistry: every node pulls each image.ref from its registry (for sites
	// with a registry nearby); built images are pushed there first (benchctl build --push).
	DistributionRegistry = "registry"
	// DistributionStream: rank 0 streams each image over TCP along a chain of the ranks;
	// each loads it while passing it on. No shared filesystem is needed for images.
	DistributionStream = "stream"
)

// Container engines (Manifest.Engine).
const (
	EngineDocker = "docker"
	EnginePodman = "podman"
)

// Streams reports whether rank 0 streams the images to the other nodes (distribution:
// stream).
func (m *Manifest) Streams() bool { return m.Distribution == DistributionStream }

// PullsEverywhere reports whether every node pulls the images itself (distribution:
// registry) rather than loading them from the shared cache.
func (m *Manifest) PullsEverywhere() bool { return m.Distribution == DistributionRegistry }

// LogScan is how benchmark logs are scanned for errors: a line that contains one of Errors
// and none of Benign fails the benchmark, even at exit 0. Nil lists: the defaults
// (package logscan).
type LogScan struct {
	Disabled bool     `json:"disabled,omitempty" yaml:"disabled,omitempty"`
	Errors   []string `json:"errors,omitempty" yaml:"errors,omitempty"`
	Benign   []string `json:"benign,omitempty" yaml:"benign,omitempty"`
}

// Job holds how the nodes of a job supervise each other.
type Job struct {
	// Heartbeat is the job channel's heartbeat period; 0: the default (5 s). A node
	// silent for three periods is lost.
	Heartbeat Duration `json:"heartbeat,omitempty" yaml:"heartbeat,omitempty"`
}

// Heartbeat bounds: short enough to notice a lost node fast, long enough to cost nothing.
const (
	MinHeartbeat = 100 * time.Millisecond
	MaxHeartbeat = 10 * time.Minute
)

// Image is how a benchmark image is obtained: built from Dockerfile, or Ref as it is. The
// manifest's Image may have neither when every benchmark gets its image elsewhere (its own
// image:, or a MAD model's Dockerfile); its BuildArgs, Target and Platform then apply to
// the catalog's images.
type Image struct {
	Dockerfile string   `json:"dockerfile,omitempty" yaml:"dockerfile,omitempty"`
	Context    string   `json:"context,omitempty" yaml:"context,omitempty"`
	Target     string   `json:"target,omitempty" yaml:"target,omitempty"`
	Platform   string   `json:"platform,omitempty" yaml:"platform,omitempty"`
	BuildArgs  []EnvVar `json:"buildArgs,omitempty" yaml:"buildArgs,omitempty"` // sorted by name
	Tag        string   `json:"tag,omitempty" yaml:"tag,omitempty"`             // empty: benchctl/<name>:<key prefix>
	Ref        string   `json:"ref,omitempty" yaml:"ref,omitempty"`
	// Pull is when an image.ref is pulled from its registry: missing (default), always or
	// never. PullSecret names a variable under secrets: whose value is user:password (or a
	// token) for the registry; without it, the docker CLI's credentials are used.
	Pull       string `json:"pull,omitempty" yaml:"pull,omitempty"`
	PullSecret string `json:"pullSecret,omitempty" yaml:"pullSecret,omitempty"`
}

// Builds reports whether the image is built from a Dockerfile (rather than used by ref).
func (i Image) Builds() bool { return i.Dockerfile != "" }

// Given reports whether the image names one (a Dockerfile or a ref).
func (i Image) Given() bool { return i.Dockerfile != "" || i.Ref != "" }

// String names the image for people: its Dockerfile, else its ref.
func (i Image) String() string {
	if i.Builds() {
		return i.Dockerfile
	}
	return i.Ref
}

// Vendors of GPUs.
const (
	VendorAuto   = "auto"
	VendorAMD    = "amd"
	VendorNVIDIA = "nvidia"
	VendorNone   = "none"
)

// GPU selects GPUs per node. Count 0 means all the node has (or Slurm gave the job).
type GPU struct {
	Vendor string `json:"vendor" yaml:"vendor"`
	Count  Count  `json:"count" yaml:"count"`
}

// Count is a GPU count where 0 means "all".
type Count int

// MarshalJSON writes 0 as "all".
func (c Count) MarshalJSON() ([]byte, error) {
	if c == 0 {
		return []byte(`"all"`), nil
	}
	return []byte(strconv.Itoa(int(c))), nil
}

// MarshalYAML writes 0 as "all".
func (c Count) MarshalYAML() (any, error) {
	if c == 0 {
		return "all", nil
	}
	return int(c), nil
}

// Mount is a bind mount from the host into the benchmark container.
type Mount struct {
	Source   string `json:"source" yaml:"source"`
	Target   string `json:"target" yaml:"target"`
	ReadOnly bool   `json:"readOnly" yaml:"readOnly"`
}

// EnvVar is a NAME=value pair. Secret values are replaced by "***" in Redacted copies; an
// env value is secret when it takes a variable listed under secrets, or one named like a
// credential (CredentialLike) that is not.
type EnvVar struct {
	Name   string `json:"name" yaml:"name"`
	Value  string `json:"value" yaml:"value"`
	Secret bool   `json:"secret,omitempty" yaml:"secret,omitempty"`
}

// Container holds the container settings of every benchmark.
type Container struct {
	Network string   `json:"network" yaml:"network"`
	IPC     string   `json:"ipc" yaml:"ipc"`
	ShmSize int64    `json:"shmSize,omitempty" yaml:"shmSize,omitempty"` // bytes; 0 = engine default
	User    string   `json:"user,omitempty" yaml:"user,omitempty"`
	CapAdd  []string `json:"capAdd,omitempty" yaml:"capAdd,omitempty"`
	Devices []Device `json:"devices,omitempty" yaml:"devices,omitempty"`
	Ulimits []Limit  `json:"ulimits,omitempty" yaml:"ulimits,omitempty"` // sorted by name
	// SecurityOpt and GroupAdd come from container.extraOptions (--security-opt,
	// --group-add). The options' text is not kept: an -e value could be a credential.
	SecurityOpt []string `json:"securityOpt,omitempty" yaml:"securityOpt,omitempty"`
	GroupAdd    []string `json:"groupAdd,omitempty" yaml:"groupAdd,omitempty"`
}

// Device is a host device given to the container.
type Device struct {
	Host        string `json:"host" yaml:"host"`
	Container   string `json:"container" yaml:"container"`
	Permissions string `json:"permissions" yaml:"permissions"`
}

// Limit is a ulimit; -1 means unlimited.
type Limit struct {
	Name string `json:"name" yaml:"name"`
	Soft int64  `json:"soft" yaml:"soft"`
	Hard int64  `json:"hard" yaml:"hard"`
}

// DefaultTimeout is a benchmark's timeout when the manifest gives none.
const DefaultTimeout = 2 * time.Hour

// Benchmark is one command run in the image on every node.
type Benchmark struct {
	Name    string   `json:"name" yaml:"name"`
	Command []string `json:"command" yaml:"command"`
	Workdir string   `json:"workdir,omitempty" yaml:"workdir,omitempty"`
	Env     []EnvVar `json:"env,omitempty" yaml:"env,omitempty"`
	Timeout Duration `json:"timeout" yaml:"timeout"`
	Results string   `json:"results,omitempty" yaml:"results,omitempty"` // relative to BENCHCTL_OUTPUT_DIR
	Tags    []string `json:"tags,omitempty" yaml:"tags,omitempty"`
	// OnFailure is what a failure of this benchmark on any node does to the job: abort it
	// (every node stops its container) or let the others continue. Empty: the default,
	// see Aborts.
	OnFailure string `json:"onFailure,omitempty" yaml:"onFailure,omitempty"`
	// Launcher is the benchmark's distributed launcher (Launcher* constants); "" is torchrun.
	Launcher string `json:"launcher,omitempty" yaml:"launcher,omitempty"`
	// RanksPerNode is an MPI launcher's ranks on each node; 0: the node's GPUs (at least 1).
	RanksPerNode int `json:"ranksPerNode,omitempty" yaml:"ranksPerNode,omitempty"`
	// NoLogScan turns the log error scan off for this benchmark (logScan: false, or a MAD
	// model's log_error_pattern_scan: false).
	NoLogScan bool `json:"noLogScan,omitempty" yaml:"noLogScan,omitempty"`
	// LogErrors and LogBenign are a MAD model's own log_error_patterns (instead of the
	// defaults, unless the manifest's logScan.errors is given) and log_error_benign_patterns
	// (ignored besides the manifest's or the default benign lines).
	LogErrors []string `json:"logErrors,omitempty" yaml:"logErrors,omitempty"`
	LogBenign []string `json:"logBenign,omitempty" yaml:"logBenign,omitempty"`
	// Container and Mounts, when set, replace the manifest's for this benchmark: a MAD
	// model's additional_docker_run_options merged into them.
	Container *Container `json:"container,omitempty" yaml:"container,omitempty"`
	Mounts    []Mount    `json:"mounts,omitempty" yaml:"mounts,omitempty"`
	// Model is set for benchmarks imported from a MAD catalog.
	Model *Model `json:"model,omitempty" yaml:"model,omitempty"`
	// Image, when set, is the benchmark's own image: its image: in the manifest, or a
	// MAD model's Dockerfile picked by GPU vendor. Nil: the manifest's image.
	Image *Image `json:"image,omitempty" yaml:"image,omitempty"`
	// Figures are read from the output when the benchmark ends (package figures), and
	// Success judges it.
	Figures []figures.Spec   `json:"figures,omitempty" yaml:"figures,omitempty"`
	Success *figures.Success `json:"success,omitempty" yaml:"success,omitempty"`
}

// What a benchmark's failure does to the job (Benchmark.OnFailure).
const (
	OnFailureAbort    = "abort"
	OnFailureContinue = "continue"
)

// Aborts reports whether a failure of b aborts a job of world nodes: as the manifest says,
// else when there is more than one node (the peers of a collective would hang until
// their own timeout).
func (b Benchmark) Aborts(world int) bool {
	switch b.OnFailure {
	case OnFailureAbort:
		return true
	case OnFailureContinue:
		return false
	}
	return world > 1
}

// Model is what a MAD catalog entry says beyond the command (for perf.csv columns).
type Model struct {
	// Name is the model's name in its catalog when it is not the benchmark's: <dir>/<name>
	// for a model of a MAD checkout's scripts/<dir>/models.json.
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// File is the file the model comes from when it is not Catalog (scripts/<dir>/models.json).
	File string `json:"file,omitempty" yaml:"file,omitempty"`
	// Data is the model's data key: the names of data.json entries it reads; DataSets
	// are those entries, resolved.
	Data     string    `json:"data,omitempty" yaml:"data,omitempty"`
	DataSets []DataSet `json:"dataSets,omitempty" yaml:"dataSets,omitempty"`
	// RunDir is the folder of the checkout (slash-separated, relative to it) that is copied
	// into the model's run directory, where it runs (madengine's model directory); "" for
	// a program of the image, run from the workspace without a copy.
	RunDir string `json:"runDir,omitempty" yaml:"runDir,omitempty"`
	// GuestOS is the guest OS the model's image is for (MAD_GUEST_OS): models.guestOS,
	// else its Dockerfile's CONTEXT guest_os.
	GuestOS string `json:"guestOS,omitempty" yaml:"guestOS,omitempty"`
	Catalog string `json:"catalog" yaml:"catalog"`
	Line    int    `json:"line" yaml:"line"`
	URL     string `json:"url,omitempty" yaml:"url,omitempty"`
	// Cred names the entry of the checkout's credential.json the url is cloned with (a
	// name, never the credential).
	Cred string `json:"cred,omitempty" yaml:"cred,omitempty"`
	// Commit is the commit of the url's clone, which the job's rank 0 makes (perf.csv's
	// git_commit for the model); "" before it, and for a model without a url.
	Commit            string   `json:"commit,omitempty" yaml:"commit,omitempty"`
	Dockerfile        string   `json:"dockerfile,omitempty" yaml:"dockerfile,omitempty"`
	Scripts           string   `json:"scripts,omitempty" yaml:"scripts,omitempty"`
	Args              string   `json:"args,omitempty" yaml:"args,omitempty"`
	NGPUs             string   `json:"nGPUs,omitempty" yaml:"nGPUs,omitempty"`
	Owner             string   `json:"owner,omitempty" yaml:"owner,omitempty"`
	TrainingPrecision string   `json:"trainingPrecision,omitempty" yaml:"trainingPrecision,omitempty"`
	MultipleResults   string   `json:"multipleResults,omitempty" yaml:"multipleResults,omitempty"`
	SkipGPUArch       []string `json:"skipGPUArch,omitempty" yaml:"skipGPUArch,omitempty"`
	// RunOptions are the model's additional_docker_run_options, as written.
	RunOptions string `json:"runOptions,omitempty" yaml:"runOptions,omitempty"`
	// Distributed is the model's distributed settings beyond its launcher; nil: none.
	Distributed *Distributed      `json:"distributed,omitempty" yaml:"distributed,omitempty"`
	Extra       map[string]string `json:"extra,omitempty" yaml:"extra,omitempty"` // unknown keys, as JSON text
}

// Duration is a time.Duration that prints as "2h0m0s".
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// MarshalYAML writes the duration as text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Models is the catalog import the manifest asked for.
type Models struct {
	Catalog string   `json:"catalog" yaml:"catalog"`
	Tags    []string `json:"tags,omitempty" yaml:"tags,omitempty"`
	Names   []string `json:"names,omitempty" yaml:"names,omitempty"`
	GuestOS string   `json:"guestOS,omitempty" yaml:"guestOS,omitempty"`
	// GPUVendor (amd or nvidia) picks the models' Dockerfiles; "" means gpu.vendor's.
	GPUVendor string `json:"gpuVendor,omitempty" yaml:"gpuVendor,omitempty"`
}

// Slurm holds the manifest's defaults for `benchctl submit`.
type Slurm struct {
	Nodes       int      `json:"nodes" yaml:"nodes"`
	Partition   string   `json:"partition,omitempty" yaml:"partition,omitempty"`
	Account     string   `json:"account,omitempty" yaml:"account,omitempty"`
	QOS         string   `json:"qos,omitempty" yaml:"qos,omitempty"`
	Time        string   `json:"time,omitempty" yaml:"time,omitempty"`
	GPUsPerNode *int     `json:"gpusPerNode,omitempty" yaml:"gpusPerNode,omitempty"`
	Exclusive   bool     `json:"exclusive" yaml:"exclusive"`
	SbatchArgs  []string `json:"sbatchArgs,omitempty" yaml:"sbatchArgs,omitempty"`
}

// Redacted returns a deep enough copy with every secret value replaced by "***": the only
// form that may be printed, logged or written to a file.
func (m *Manifest) Redacted() *Manifest {
	c := *m
	c.Env = redactVars(m.Env)
	c.Image.BuildArgs = redactVars(m.Image.BuildArgs)
	c.Benchmarks = make([]Benchmark, len(m.Benchmarks))
	for i, b := range m.Benchmarks {
		b.Env = redactVars(b.Env)
		if b.Model != nil && (b.Model.RunOptions != "" || b.Model.URL != "") {
			mc := *b.Model
			mc.RunOptions = redactRunOptions(mc.RunOptions, b.Env)
			mc.URL = RedactURL(mc.URL) // a token written into a MAD model's url
			b.Model = &mc
		}
		c.Benchmarks[i] = b
	}
	if m.ToolDefs != nil {
		c.ToolDefs = make([]Tool, len(m.ToolDefs))
		for i, t := range m.ToolDefs {
			t.Env = redactVars(t.Env)
			c.ToolDefs[i] = t
		}
	}
	if m.Experiment != nil {
		x := *m.Experiment
		x.Variants = make([]Variant, len(m.Experiment.Variants))
		for i, v := range m.Experiment.Variants {
			bs := make([]Benchmark, len(v.Benchmarks))
			for j, b := range v.Benchmarks {
				b.Env = redactVars(b.Env)
				bs[j] = b
			}
			v.Benchmarks = bs
			x.Variants[i] = v
		}
		c.Experiment = &x
	}
	return &c
}

// RedactURL hides the password (or token) a url carries in its user information:
// https://user:token@host/x -> https://user:***@host/x, and https://token@host/x (a token
// as the user name, as git hosts take it) -> https://***@host/x. Other urls are returned
// as they are.
func RedactURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return raw
	}
	name := u.User.Username()
	if _, has := u.User.Password(); has {
		name += ":" + Redacted
	} else if u.Scheme == "http" || u.Scheme == "https" {
		name = Redacted
	} else {
		return raw
	}
	u.User = nil
	rest := u.String() // scheme://host/path
	scheme, after, ok := strings.Cut(rest, "://")
	if !ok {
		return raw
	}
	return scheme + "://" + name + "@" + after
}

// redactRunOptions hides the values that docker-run flags give to a secret or
// credential-like variable (-e HF_TOKEN=...): the text is kept as metadata, and would
// otherwise carry the value into job.json.
func redactRunOptions(opts string, env []EnvVar) string {
	words, err := shellwords.Split(opts)
	if err != nil {
		return Redacted
	}
	secret := map[string]bool{}
	for _, e := range env {
		secret[e.Name] = e.Secret
	}
	for i, w := range words {
		kv := w
		switch {
		case i > 0 && (words[i-1] == "-e" || words[i-1] == "--env"):
		case strings.HasPrefix(w, "--env="):
			kv = strings.TrimPrefix(w, "--env=")
		case strings.HasPrefix(w, "-e") && len(w) > 2:
			kv = strings.TrimPrefix(strings.TrimPrefix(w, "-e"), "=")
		default:
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); ok && (secret[k] || CredentialLike(k)) {
			words[i] = strings.TrimSuffix(w, kv) + k + "=" + Redacted
		}
	}
	return strings.Join(words, " ")
}

// Redacted is the placeholder printed instead of a secret value.
const Redacted = textredact.Redacted

func redactVars(in []EnvVar) []EnvVar {
	if in == nil {
		return nil
	}
	out := make([]EnvVar, len(in))
	for i, v := range in {
		if v.Secret {
			v.Value = Redacted
		}
		out[i] = v
	}
	return out
}

// Benchmark returns the benchmark with the given name.
func (m *Manifest) Benchmark(name string) (Benchmark, bool) {
	for _, b := range m.Benchmarks {
		if b.Name == name {
			return b, true
		}
	}
	return Benchmark{}, false
}

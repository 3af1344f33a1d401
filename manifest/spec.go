package manifest

import "github.com/benchctl/benchctl/manifest/kubernetes"

// The manifest as written. Field names are the schema's (json tags); both JSON and YAML
// decode through the same strict decoder. Resolve turns a Spec into a Manifest.
//
// The doc comment of every field below is also its description in the manifest's JSON
// Schema (schema.go, `benchctl schema`): write it for the person editing a manifest. A
// leading "Field is " is dropped there.

// Spec is the top level of a manifest file.
type Spec struct {
	// Version is the manifest format version: only 1.
	Version *int `json:"version"`
	// Name is the manifest's name: lower-case letters, digits, '.', '_' and '-', at most 63,
	// usable as an image name (images are tagged benchctl/<name>).
	Name string `json:"name"`
	// Image is how the benchmark image is obtained: dockerfile (build it) or ref (use an
	// existing image). Required unless every benchmark gets an image elsewhere (its own
	// image, or a catalog model's Dockerfile); then it may hold buildArgs, target and
	// platform for the catalog's images.
	Image *ImageSpec `json:"image"`
	// GPU is the GPU vendor and how many GPUs each node's container gets.
	GPU GPUSpec `json:"gpu"`
	// Mounts are bind mounts into the container: "SOURCE:TARGET", "SOURCE:TARGET:ro" (or
	// :rw) or {source, target, readOnly}. Relative sources are relative to the manifest's
	// folder; targets are absolute container paths.
	Mounts []MountSpec `json:"mounts"`
	// Env is the container environment. Values may use ${VAR}; numbers and booleans are
	// kept as written.
	Env map[string]string `json:"env"`
	// PassEnv lists host variables copied into the container at run time: names or globs
	// such as NCCL_*.
	PassEnv []string `json:"passEnv"`
	// Secrets lists host variables passed into the container at run time only: their
	// values never reach a build, a record, a log or a printed command.
	Secrets []string `json:"secrets"`
	// Container holds the container settings shared by all benchmarks.
	Container ContainerSpec `json:"container"`
	// Benchmarks are the benchmarks run on every node, in order. Required unless models
	// imports some.
	Benchmarks []BenchmarkSpec `json:"benchmarks"`
	// Models imports benchmarks from a madengine/MAD models.json catalog.
	Models *ModelsSpec `json:"models"`
	// Slurm holds defaults for `benchctl submit`; its flags override them.
	Slurm SlurmSpec `json:"slurm"`
	// Kubernetes holds how `benchctl submit --scheduler kubernetes` runs the job on a
	// cluster (an Indexed Job, one pod per node); its flags override it.
	Kubernetes kubernetes.Block `json:"kubernetes"`
	// Job holds how the nodes of a job supervise each other.
	Job JobSpec `json:"job"`
	// LogScan says how benchmark logs are scanned for error lines (madengine's log error
	// scan): a line with an error pattern fails the benchmark, even at exit 0.
	LogScan LogScanSpec `json:"logScan"`
	// Distribution is how images reach the nodes: auto (the default: streamed from rank 0
	// when the shared cache lacks the image or is not shared by every node, else the cache),
	// cache (rank 0 builds or pulls each image once, the other nodes load it from the
	// shared cache), stream (rank 0 streams each image along a chain of the nodes, each
	// loading it while passing it on: no shared filesystem needed for images) or registry
	// (every node pulls each image.ref from its registry).
	Distribution string `json:"distribution"`
	// Engine is the container engine the benchmarks run in: docker or podman. Without it,
	// the engine DOCKER_HOST names (else Docker's socket). With podman and no DOCKER_HOST,
	// benchctl finds Podman's socket (the user's rootless one, else the rootful one), and
	// where none answers and podman is installed, starts Podman's service itself for the
	// run; an engine of the other kind answering is an error.
	Engine string `json:"engine"`
	// Runtime is where the benchmarks run: engine (the default: each in a container of the
	// Docker or Podman engine) or process (each a child process of benchctl, in a process
	// group of its own, on the node as it is: bare metal with modules, or inside a container
	// someone else started, such as pyxis, enroot, Apptainer or a Kubernetes pod). With
	// process, what has no meaning without an engine is refused: image.dockerfile, mounts
	// other than a path onto itself, container options other than ulimits, engine,
	// distribution; an image.ref is recorded as what the environment is.
	Runtime string `json:"runtime"`
	// Experiment runs the benchmarks as many variants (a matrix of parameters, nodes among
	// them) and trials in one job: {{name}} in a benchmark's command, env values and results
	// is the variant's value of parameter name.
	Experiment *ExperimentSpec `json:"experiment"`
	// Metrics says, per metric name or glob (first match wins), which way is better
	// (higher or lower) and how much change compare and collect --check tolerate, e.g.
	// {tokens_per_second: {better: higher, tolerance: 3%}, "*_busbw": {better: higher}}.
	// Without a rule, times and latencies are guessed lower-is-better, the rest higher.
	Metrics MetricsSpec `json:"metrics"`
	// Telemetry is how each node samples its GPUs (power, energy, clocks, temperature,
	// utilisation, memory, throttle reasons) while a benchmark runs: {interval: 1s} (the
	// default; from 100ms to 1h) or off. Samples go to the node's folder; collect turns them
	// into energy, power and a throttled flag per result.
	Telemetry TelemetrySpec `json:"telemetry"`
	// Launcher is the distributed launcher of every benchmark that names none (a catalog
	// model's distributed.launcher included), with madengine's names: torchrun (the
	// default), torchtitan, deepspeed, megatron-lm, primus, vllm, sglang or sglang-disagg.
	// It sets MAD_MULTI_NODE_RUNNER and the launcher's variables from the node's context
	// (docs/manifest.md). mpirun (Open MPI) and mpiexec (MPICH, Intel MPI) run the
	// benchmark's command as an MPI program across the job's nodes: rank 0 runs the
	// launcher, the others wait for the ranks it starts through benchctl's agent, no sshd
	// (docs/mpi.md).
	Launcher string `json:"launcher"`
	// RanksPerNode is the MPI ranks on each node of every MPI benchmark that names none
	// (default: the node's GPUs, at least 1).
	RanksPerNode int `json:"ranksPerNode"`
	// Tools are profilers and tracers (madengine's tools) every benchmark runs under, in
	// the order given (the first innermost): names from the MAD checkout's
	// scripts/common/tools.json, a tools.json beside the manifest, or --tools-file.
	// `benchctl run --tools` replaces this list.
	Tools []string `json:"tools"`
}

// ExperimentSpec turns one job into many runs: every variant of the matrix, each repeated.
type ExperimentSpec struct {
	// Matrix lists each parameter's values (GitHub Actions' matrix): every combination is a
	// variant. nodes is reserved: how many nodes of the allocation a variant uses (ranks
	// 0..n-1). exclude removes the combinations that match an entry (some parameters are
	// enough); include adds parameters to the combinations it fits, or adds a variant.
	Matrix MatrixSpec `json:"matrix"`
	// Repeat is how many measured trials each variant runs (default 1).
	Repeat *int `json:"repeat"`
	// Warmup is how many trials each variant runs before them, never counted (default 0).
	Warmup *int `json:"warmup"`
	// Order is the order of the trials: interleave (the default: trial 1 of every variant,
	// then trial 2 of every variant, ...), sequential (every trial of one variant before the
	// next) or shuffle (a random order, from seed).
	Order string `json:"order"`
	// Seed is the seed of the shuffle order (default: one derived from the Slurm job id, so
	// every node and a requeue agree; it is recorded in job.json).
	Seed *int64 `json:"seed"`
}

// LogScanSpec says how benchmark logs are scanned for errors (madengine's log error scan).
type LogScanSpec struct {
	// Enabled false turns the log error scan off for every benchmark (default: true).
	Enabled *bool `json:"enabled"`
	// Errors are the texts (case-sensitive, one line each) whose presence in a log line
	// fails the benchmark; they replace the defaults.
	Errors []string `json:"errors"`
	// Benign are the texts that make a log line never an error; they replace the defaults.
	Benign []string `json:"benign"`
}

// JobSpec holds how the nodes of a job supervise each other.
type JobSpec struct {
	// Heartbeat is how often rank 0 and every other node tell each other they are alive:
	// a duration from "100ms" to "10m" (default: "5s"). A node silent for three periods is
	// lost.
	Heartbeat DurationSpec `json:"heartbeat"`
}

// ImageSpec says how to get the benchmark image: build a Dockerfile or use a ref.
type ImageSpec struct {
	// Dockerfile is the Dockerfile to build, relative to the manifest's folder.
	Dockerfile string `json:"dockerfile"`
	// Context is the build context folder (default: the Dockerfile's folder); its
	// .dockerignore is honoured.
	Context string `json:"context"`
	// Target is the build stage to build.
	Target string `json:"target"`
	// Platform is the platform to build for, os/arch[/variant] such as linux/amd64
	// (default: the engine's).
	Platform string `json:"platform"`
	// BuildArgs are the build arguments. Values may use ${VAR} (never a secret); numbers
	// and booleans are kept as written.
	BuildArgs map[string]string `json:"buildArgs"`
	// Tag is the tag of the built image (default: benchctl/<name>:<first 12 of its cache
	// key>).
	Tag string `json:"tag"`
	// Ref is an existing image to use instead of building one: rank 0 pulls it when its
	// engine lacks it (see pull) and shares it with the other nodes.
	Ref string `json:"ref"`
	// Pull is when the image ref is pulled: missing (the default: when rank 0's engine
	// lacks it), always, or never.
	Pull string `json:"pull"`
	// PullSecret is the name of a variable whose value is user:password for the registry
	// of ref (a token goes where the password goes), read only when pulling: it reaches
	// no container. Without it, the docker CLI's credentials are used.
	PullSecret string `json:"pullSecret"`
}

// GPUSpec selects the GPU vendor and how many GPUs each node's container gets.
type GPUSpec struct {
	// Vendor is the GPU vendor: amd, nvidia, none, or auto (the default: what the node has).
	Vendor string `json:"vendor"`
	// Count is the number of GPUs per node, or "all" (the default).
	Count GPUCount `json:"count"`
}

// ContainerSpec holds the container settings shared by all benchmarks.
type ContainerSpec struct {
	// Network is the container's network: host (the default; multi-node benchmarks need
	// it), none or bridge.
	Network string `json:"network"`
	// IPC is the container's IPC namespace: host (the default), private, shareable or none.
	IPC string `json:"ipc"`
	// ShmSize is the size of /dev/shm: a number of bytes, or a size such as "16g" or
	// "512m" (default: the engine's, 64 MiB).
	ShmSize ByteSize `json:"shmSize"`
	// User is who the container runs as: NAME, UID, NAME:GROUP or UID:GID (default: the
	// image's USER).
	User string `json:"user"`
	// CapAdd lists Linux capabilities to add, such as SYS_PTRACE or IPC_LOCK.
	CapAdd []string `json:"capAdd"`
	// Devices lists host devices to add, HOST[:CONTAINER[:PERMISSIONS]] with HOST under
	// /dev, such as /dev/infiniband/uverbs0.
	Devices []string `json:"devices"`
	// Ulimits are resource limits by name (nofile, memlock, stack, ...): one number for
	// both soft and hard (-1: unlimited), or {soft, hard}.
	Ulimits map[string]Ulimit `json:"ulimits"`
	// ExtraOptions are docker-run flags (a string split like a shell splits words, or a
	// list of words), each parsed into the field it stands for: the settings above, env
	// and mounts. Flags benchctl cannot express are refused.
	ExtraOptions ArgsSpec `json:"extraOptions"`
}

// BenchmarkSpec is one benchmark: a command run in the image on every node.
type BenchmarkSpec struct {
	// Name is the benchmark's name, unique in the manifest: letters, digits, '.', '_' and
	// '-', at most 100.
	Name string `json:"name"`
	// Command is the program and its arguments as a list (exec form); benchctl never runs
	// a shell string: use ["sh", "-c", "..."] if you need a shell.
	Command []string `json:"command"`
	// Workdir is the absolute working directory in the container (default: the image's).
	Workdir string `json:"workdir"`
	// Env is this benchmark's environment; it overrides the manifest's env.
	Env map[string]string `json:"env"`
	// Timeout is how long the benchmark may run before its container is stopped
	// (diagnostics first): a duration such as "90m" or "2h" (the default).
	Timeout DurationSpec `json:"timeout"`
	// Results is the CSV file the benchmark writes under $BENCHCTL_OUTPUT_DIR: a relative
	// file name such as perf.csv.
	Results string `json:"results"`
	// Tags label the benchmark, for selecting benchmarks by tag.
	Tags []string `json:"tags"`
	// OnFailure is what a failure of this benchmark on any node does to the job: abort
	// (stop every node's container; the default when the job has more than one node) or
	// continue (the other nodes go on).
	OnFailure string `json:"onFailure"`
	// Launcher is this benchmark's distributed launcher (see the manifest's launcher): it
	// sets MAD_MULTI_NODE_RUNNER, a value the benchmark's script splits into words, and the
	// launcher's variables; or, with mpirun or mpiexec, runs the command as an MPI program.
	Launcher string `json:"launcher"`
	// RanksPerNode is the MPI ranks on each node with launcher mpirun or mpiexec (default:
	// the node's GPUs, at least 1), at most what a node has (its GPUs, or its CPUs).
	RanksPerNode int `json:"ranksPerNode"`
	// LogScan false turns the log error scan off for this benchmark.
	LogScan *bool `json:"logScan"`
	// Image is this benchmark's own image (dockerfile or ref); without it the benchmark
	// runs on the manifest's image.
	Image *ImageSpec `json:"image"`
	// Figures are figures of merit read from the benchmark's output, for programs that
	// print text rather than a results CSV: each a pattern with a named group value (its
	// other named groups tell rows apart) with its metric, unit and better, or a built-in
	// parser (nccl-tests, rccl-tests, osu, hpcc, hpl); from stdout or a file under
	// $BENCHCTL_OUTPUT_DIR; min and max bound its values. A figure missing or out of bounds
	// fails the benchmark.
	Figures []FigureSpec `json:"figures"`
	// Success decides pass or fail from the output: require lists patterns some line must
	// match, forbid patterns no line may match.
	Success *SuccessSpec `json:"success"`
}

// FigureSpec is one figure of merit read from a benchmark's output (figures.Spec).
type FigureSpec struct {
	// Metric is the figure's metric name in perf.csv (with a pattern).
	Metric string `json:"metric"`
	// Pattern is an RE2 pattern matched against each line, with a named group (?P<value>...)
	// for the figure's value; its other named groups become the row key.
	Pattern string `json:"pattern"`
	// Parser is a built-in parser instead of a pattern: nccl-tests, rccl-tests, osu, hpcc
	// or hpl.
	Parser string `json:"parser"`
	// From is where the text is: stdout (the default: the benchmark's output), or a file's
	// path relative to $BENCHCTL_OUTPUT_DIR.
	From string `json:"from"`
	// Unit is the figure's unit (with a pattern), such as GB/s.
	Unit string `json:"unit"`
	// Better says which way the figure is better: higher or lower (with a pattern).
	Better string `json:"better"`
	// Min is the least value the figure may have: below it, the benchmark fails.
	Min *float64 `json:"min"`
	// Max is the greatest value the figure may have: above it, the benchmark fails.
	Max *float64 `json:"max"`
}

// SuccessSpec judges a benchmark by its output (figures.Success).
type SuccessSpec struct {
	// Require are RE2 patterns each of which some line of the output must match.
	Require []string `json:"require"`
	// Forbid are RE2 patterns no line of the output may match.
	Forbid []string `json:"forbid"`
}

// ModelsSpec imports benchmarks from a madengine/MAD models.json catalog.
type ModelsSpec struct {
	// Catalog is the path of a MAD-style models.json, relative to the manifest's folder (a
	// folder means its models.json).
	Catalog string `json:"catalog"`
	// Tags select the models that have any of them (a model's name works as a tag; all
	// selects every model).
	Tags []string `json:"tags"`
	// Names select models by name.
	Names []string `json:"names"`
	// GuestOS narrows each model's Dockerfile to those whose CONTEXT line names this
	// guest_os (madengine's guest_os), besides the GPU vendor.
	GuestOS string `json:"guestOS"`
	// GPUVendor picks each model's Dockerfile by the gpu_vendor of its CONTEXT line
	// (madengine's gpu_vendor): amd or nvidia (default: gpu.vendor).
	GPUVendor string `json:"gpuVendor"`
}

// SlurmSpec holds defaults for `benchctl submit`; flags override them.
type SlurmSpec struct {
	// Nodes is the number of nodes (default: 1).
	Nodes int `json:"nodes"`
	// Partition is the Slurm partition (default: Slurm's).
	Partition string `json:"partition"`
	// Account is the Slurm account the job is charged to.
	Account string `json:"account"`
	// QOS is the Slurm quality of service.
	QOS string `json:"qos"`
	// Time is the job's time limit in Slurm's format: MM, HH:MM:SS, D-HH:MM:SS or
	// UNLIMITED (default: the partition's).
	Time string `json:"time"`
	// GPUsPerNode is the number of GPUs per node asked of Slurm (sbatch --gpus-per-node).
	GPUsPerNode *int `json:"gpusPerNode"`
	// Exclusive asks Slurm for whole nodes (sbatch --exclusive).
	Exclusive bool `json:"exclusive"`
	// SbatchArgs are more sbatch options, one per item, such as "--constraint=mi300x".
	SbatchArgs []string `json:"sbatchArgs"`
}

package manifest

// The manifest as written. Field names are the schema's (json tags); both JSON and YAML
// decode through the same strict decoder. Resolve turns a Spec into a Manifest.

// Spec is the top level of a manifest file.
type Spec struct {
	Version    *int              `json:"version"`
	Name       string            `json:"name"`
	Image      *ImageSpec        `json:"image"`
	GPU        GPUSpec           `json:"gpu"`
	Mounts     []MountSpec       `json:"mounts"`
	Env        map[string]string `json:"env"`
	PassEnv    []string          `json:"passEnv"`
	Secrets    []string          `json:"secrets"`
	Container  ContainerSpec     `json:"container"`
	Benchmarks []BenchmarkSpec   `json:"benchmarks"`
	Models     *ModelsSpec       `json:"models"`
	Slurm      SlurmSpec         `json:"slurm"`
	Job        JobSpec           `json:"job"`
	LogScan    LogScanSpec       `json:"logScan"`
}

// LogScanSpec says how benchmark logs are scanned for errors (madengine's log error scan).
type LogScanSpec struct {
	Enabled *bool    `json:"enabled"`
	Errors  []string `json:"errors"`
	Benign  []string `json:"benign"`
}

// JobSpec holds how the nodes of a job supervise each other.
type JobSpec struct {
	Heartbeat DurationSpec `json:"heartbeat"`
}

// ImageSpec says how to get the benchmark image: build a Dockerfile or use a ref.
type ImageSpec struct {
	Dockerfile string            `json:"dockerfile"`
	Context    string            `json:"context"`
	Target     string            `json:"target"`
	Platform   string            `json:"platform"`
	BuildArgs  map[string]string `json:"buildArgs"`
	Tag        string            `json:"tag"`
	Ref        string            `json:"ref"`
	Pull       string            `json:"pull"`
	PullSecret string            `json:"pullSecret"`
}

// GPUSpec selects the GPU vendor and how many GPUs each node's container gets.
type GPUSpec struct {
	Vendor string   `json:"vendor"`
	Count  GPUCount `json:"count"`
}

// ContainerSpec holds the container settings shared by all benchmarks.
type ContainerSpec struct {
	Network string            `json:"network"`
	IPC     string            `json:"ipc"`
	ShmSize ByteSize          `json:"shmSize"`
	User    string            `json:"user"`
	CapAdd  []string          `json:"capAdd"`
	Devices []string          `json:"devices"`
	Ulimits map[string]Ulimit `json:"ulimits"`
	// ExtraOptions are docker-run flags (a string, or a list of words), parsed into the
	// fields above and env and mounts: see RunFlags.
	ExtraOptions ArgsSpec `json:"extraOptions"`
}

// BenchmarkSpec is one benchmark: a command run in the image on every node.
type BenchmarkSpec struct {
	Name    string            `json:"name"`
	Command []string          `json:"command"`
	Workdir string            `json:"workdir"`
	Env     map[string]string `json:"env"`
	Timeout DurationSpec      `json:"timeout"`
	Results string            `json:"results"`
	Tags    []string          `json:"tags"`
	// OnFailure is "abort" or "continue"; empty: abort when the job has more than one node.
	OnFailure string `json:"onFailure"`
	// LogScan false turns the log error scan off for this benchmark.
	LogScan *bool `json:"logScan"`
	// Image is this benchmark's own image (dockerfile or ref); without it the benchmark
	// runs on the manifest's image.
	Image *ImageSpec `json:"image"`
}

// ModelsSpec imports benchmarks from a madengine/MAD models.json catalog.
type ModelsSpec struct {
	Catalog string   `json:"catalog"`
	Tags    []string `json:"tags"`
	Names   []string `json:"names"`
	// GuestOS narrows each model's Dockerfile to those whose CONTEXT line names this
	// guest_os (madengine's guest_os), besides the GPU vendor.
	GuestOS string `json:"guestOS"`
	// GPUVendor picks each model's Dockerfile by the gpu_vendor of its CONTEXT line
	// (madengine's gpu_vendor); default: gpu.vendor.
	GPUVendor string `json:"gpuVendor"`
}

// SlurmSpec holds defaults for `benchctl submit`; flags override them.
type SlurmSpec struct {
	Nodes       int      `json:"nodes"`
	Partition   string   `json:"partition"`
	Account     string   `json:"account"`
	QOS         string   `json:"qos"`
	Time        string   `json:"time"`
	GPUsPerNode *int     `json:"gpusPerNode"`
	Exclusive   bool     `json:"exclusive"`
	SbatchArgs  []string `json:"sbatchArgs"`
}

package workload

import (
	"context"
	"io"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

// Runtime is where benchmarks' processes run on this node. Every call is bounded by its ctx;
// an implementation is safe for concurrent use.
type Runtime interface {
	// Create makes spec's process, not yet started, and returns its id. A process of the
	// same name left from a crashed earlier run is removed, and the create tried once more.
	Create(ctx context.Context, spec Spec) (id string, err error)
	// Wait delivers how the process ends, once, on the channel it returns (never closed
	// without a value). Call it before Start, so that no end is missed; it follows the
	// process until the end or ctx, whichever is first (then Exit.Err says why).
	Wait(ctx context.Context, id string) <-chan Exit
	// Start starts a created process.
	Start(ctx context.Context, id string) error
	// Logs copies the process's output (stdout and stderr, in the order written) to w until
	// the process ends and its output is read, or ctx ends. An error is the stream's loss.
	Logs(ctx context.Context, id string, w io.Writer) error
	// Stop asks the process to end (SIGTERM), and kills it (SIGKILL) after grace.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove removes the process, killing it if it still runs. Removing one that is gone
	// is not an error of consequence (callers ignore it).
	Remove(ctx context.Context, id string) error
	// List finds every process, running or not, whose labels include all of labels.
	List(ctx context.Context, labels map[string]string) ([]Process, error)
	// Inspect is the process's state, for diagnostics.
	Inspect(ctx context.Context, id string) (State, error)
	// Top lists the processes inside a running one, for diagnostics.
	Top(ctx context.Context, id string) (Top, error)
	// Describe says what the runtime is, for a diagnostics report ("Podman Engine 4.3.1
	// (API 1.41)"); "" with an error when it cannot tell.
	Describe(ctx context.Context) (string, error)
	// Facts is what the runtime is (Facts); an error when it cannot say even its version.
	Facts(ctx context.Context) (Facts, error)
	// Exec runs a command beside a running process, where the process runs (in its
	// container), and relays its streams: Stdin (nil: none) until its EOF, Stdout and
	// Stderr until the command ends; it returns the command's exit code. When ctx ends
	// first, the streams are cut and Exec returns ctx's error: the command ends at the
	// latest with the process (Stop, Remove), as an engine cannot signal what it exec'd.
	// Exec does not wait for a Stdin that never reaches its EOF.
	Exec(ctx context.Context, id string, c Command) (exitCode int, err error)
}

// Command is a command run beside a benchmark's process (Runtime.Exec).
type Command struct {
	Argv    []string // the program (Argv[0]) and its arguments; never a shell line
	Env     []string // NAME=value, added to the process's environment
	Workdir string   // "" for the process's
	User    string   // "" for the process's
	Stdin   io.Reader
	Stdout  io.Writer // nil: discarded
	Stderr  io.Writer // nil: discarded
}

// Spec is a benchmark's process as a runtime makes it: its program and arguments, where it
// runs, what it sees (environment, mounts, devices, GPUs), and the limits it runs under.
type Spec struct {
	Name    string
	Image   string   // the image it runs in ("" for a runtime without images)
	Command []string // the program (Command[0]) and its arguments; never a shell line
	Workdir string
	Env     []string // NAME=value, in order
	Labels  map[string]string
	User    string // uid[:gid] or a name the image resolves; "" for the image's
	Mounts  []manifest.Mount
	Devices []manifest.Device
	// GPURequests ask the runtime for GPUs by its own means (Docker's --gpus, CDI names).
	GPURequests []GPURequest
	GroupAdd    []string
	Network     string // host, bridge, none, ...
	IPC         string
	ShmSize     int64 // bytes; 0 for the runtime's default
	CapAdd      []string
	SecurityOpt []string
	UserNS      string // the user namespace mode; "" for the runtime's
	Ulimits     []manifest.Limit
}

// GPURequest asks for GPUs through a runtime's device driver: Driver "nvidia" with
// DeviceIDs (indices or UUIDs) and Capabilities ([["gpu"]]), or "cdi" with CDI names.
type GPURequest struct {
	Driver       string
	Count        int // -1: all of the node's GPUs; 0 with DeviceIDs
	DeviceIDs    []string
	Capabilities [][]string
}

// Exit is how a process ended: its exit code, or Err when waiting for it failed (the
// runtime lost it, or Wait's ctx ended).
type Exit struct {
	Code int
	Err  error
}

// Process is one of a job's processes as List finds it.
type Process struct {
	ID     string
	Name   string
	State  string // running, exited, created, ...
	Labels map[string]string
}

// State is what a runtime says of a process, for diagnostics.
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
	Error     string
	Pid       int // its main process on the host; 0 when not running or not known
}

// Top is the processes inside a running process: column titles and one row each.
type Top struct {
	Titles    []string
	Processes [][]string
}

// Facts is what a runtime is, as a node's record, doctor and the way GPUs reach a process
// need it. A fact it could not tell is empty.
type Facts struct {
	Kind       string // docker, podman (Engine API services); process
	Name       string // "Docker Engine - Community", "Podman Engine"
	Version    string // its version answer's
	APIVersion string // the Engine API version it speaks
	OS, Arch   string
	Components []Component
	// Rootless is what the runtime's info says (Docker's security options name
	// rootless; Podman's compatible info does not say: image.Identify asks Podman).
	Rootless bool
	// InfoKnown says the runtime's info answered: Rootless, CDISpecDirs and DataRoot are
	// facts; else InfoProblem says why not, where it was asked.
	InfoKnown   bool
	InfoProblem string
	CDISpecDirs []string // the CDI spec folders it reads (Docker 25+: empty when its CDI is off)
	DataRoot    string   // where it keeps images and containers (doctor's disk check)
}

// Component is a part of a runtime and its version (Podman's "Podman Engine 4.3.1").
type Component struct{ Name, Version string }

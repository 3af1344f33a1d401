package jobdir

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/hostfacts"
	"github.com/benchctl/benchctl/internal/safefile"
)

// NodeRecordFile is a node's record of what it was (NodeRecord), in its node folder.
const NodeRecordFile = "node.json"

// NodeRecordVersion is the schema version of node.json that this package writes.
const NodeRecordVersion = 1

// MaxNodeRecordSize bounds how much of a node.json is read: 4 MiB (a record of a node with
// 8 GPUs of 40 firmware blocks each and 16 RDMA devices is about 30 KiB).
const MaxNodeRecordSize = 4 << 20

// NodeRecord is a node's node.json: what the node was when it ran the job, written once by
// the node before its benchmarks start (after its GPUs are selected and its images are in
// its engine). A fact that could not be read is empty, and Unavailable (or the machine's
// own Unavailable) says why; collect compares the records of a job's nodes (Fields).
type NodeRecord struct {
	Version   int       `json:"version"`
	Job       string    `json:"job"`
	Attempt   int       `json:"attempt"`
	Rank      int       `json:"rank"`
	Host      string    `json:"host"`
	WrittenAt time.Time `json:"writtenAt"`
	// Machine is the kernel, OS, CPU, memory, NUMA layout, RDMA devices and Slurm version
	// (read by package host).
	Machine hostfacts.Facts `json:"machine"`
	GPU     GPURecord       `json:"gpu"`
	// Engine is the container engine the node's benchmarks ran in.
	Engine EngineRecord `json:"engine"`
	// Images are the images the node ran, as its engine has them.
	Images []ImageRecord `json:"images"`
	// Benchctl is the version of benchctl that ran on the node.
	Benchctl string `json:"benchctl"`
	// Placement is where the scheduler put this node's task (Kubernetes: its namespace,
	// pod and node); zero when the scheduler names nothing beyond the host.
	Placement Placement `json:"placement,omitzero"`
	// Unavailable says, per field of the record outside Machine that could not be read
	// ("gpu", "gpu.firmware", "gpu.topology", "engine", "images"), why.
	Unavailable map[string]string `json:"unavailable"`
}

// Placement is where a scheduler put a node's task, in its own names.
type Placement struct {
	Scheduler string `json:"scheduler"`           // SourceKubernetes, ...
	Namespace string `json:"namespace,omitempty"` // Kubernetes: the job's namespace
	Pod       string `json:"pod,omitempty"`       // Kubernetes: the node's pod
	Node      string `json:"node,omitempty"`      // the cluster's name of the machine (Kubernetes: spec.nodeName)
}

// GPURecord is the node's GPUs as its GPU management library (or sysfs) gives them.
type GPURecord struct {
	Vendor  string      `json:"vendor"` // amd, nvidia or none
	Driver  string      `json:"driver"`
	Runtime string      `json:"runtime"` // CUDA driver API version, or ROCm version
	Source  string      `json:"source"`  // which source answered (nvml, amdsmi, sysfs, ...)
	Library string      `json:"library,omitempty"`
	Devices []GPUDevice `json:"devices"`
}

// GPUDevice is one GPU of the node.
type GPUDevice struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	Arch        string `json:"arch"`
	PCIBusID    string `json:"pciBusId"`
	UUID        string `json:"uuid,omitempty"`
	MemoryBytes uint64 `json:"memoryBytes"`
	// Firmware is each firmware block (VBIOS on NVIDIA) and its version, where the
	// library gives them.
	Firmware []NamedVersion `json:"firmware"`
	// Links are the GPU's links to its peers (NVLink, xGMI), where the library gives them.
	Links []GPULink `json:"links"`
}

// GPULink is a GPU's connection to another GPU of the node.
type GPULink struct {
	Peer  int    `json:"peer"`  // the other GPU's Index
	Type  string `json:"type"`  // NVLink, xGMI, PCIe
	Count int    `json:"count"` // links of that type between the two
}

// NamedVersion is a component and its version.
type NamedVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// EngineRecord is the node's container engine: what its version API says.
type EngineRecord struct {
	// Kind is docker or podman: which engine answered (Podman names a component "Podman
	// Engine"); empty in records written before benchctl told them apart.
	Kind string `json:"kind,omitempty"`
	// Rootless is an engine whose containers' root is the user who started it.
	Rootless   bool           `json:"rootless,omitempty"`
	Name       string         `json:"name"` // Docker Engine, Podman Engine
	Version    string         `json:"version"`
	APIVersion string         `json:"apiVersion"`
	OS         string         `json:"os,omitempty"`
	Arch       string         `json:"arch,omitempty"`
	Components []NamedVersion `json:"components"` // containerd, runc, ... as the engine names them
}

// ImageRecord is an image the node ran: its id in the node's engine and, where the engine
// knows one, its registry digest. Name is the same on every node: "of <its first
// benchmark>[ and N more]".
type ImageRecord struct {
	Name       string   `json:"name"`
	ID         string   `json:"id"`
	Digest     string   `json:"digest,omitempty"`
	Benchmarks []string `json:"benchmarks,omitempty"`
}

// NodeRecord is the node's node.json.
func (n NodeDir) NodeRecord() string { return filepath.Join(n.Path, NodeRecordFile) }

// WriteNodeRecord writes node.json atomically, through the folder's descriptor. Version
// is set to NodeRecordVersion.
func (n *NodeFolder) WriteNodeRecord(r *NodeRecord) error {
	r.Version = NodeRecordVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", n.NodeRecord(), err)
	}
	return atomicfile.WriteFileAt(n.f, NodeRecordFile, append(data, '\n'), 0o644)
}

// ReadNodeRecord reads a node.json: a regular file that is not a link (a FIFO is refused
// without blocking), at most MaxNodeRecordSize, within the decoding limits of status.json.
// A record of a newer schema version is an error saying so; unknown fields are ignored.
func ReadNodeRecord(r *safefile.Reader, path string) (*NodeRecord, error) {
	data, err := r.ReadNoFollow(path, MaxNodeRecordSize)
	if err != nil {
		return nil, err
	}
	var rec NodeRecord
	if err := decodeFile(path, data, &rec); err != nil {
		return nil, err
	}
	if rec.Version > NodeRecordVersion {
		return nil, fmt.Errorf("reading %s: schema version %d; this benchctl reads up to %d (use a newer benchctl)", path, rec.Version, NodeRecordVersion)
	}
	if rec.Version < 1 {
		return nil, fmt.Errorf("reading %s: no schema version: not a node record", path)
	}
	return &rec, nil
}

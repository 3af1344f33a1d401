// Package hostfacts is the vocabulary of what a machine is — the Facts that package host
// reads and that a node's record (jobdir.NodeRecord) keeps — beneath both, so that the job
// folder's schema does not import the reader (DESIGN's layering: jobdir and host are
// siblings). It holds types (and NetDevice.Kind) only.
package hostfacts

// Facts is what this machine is. A field that could not be read is empty, and
// Unavailable says why under the field's JSON name.
type Facts struct {
	Hostname string `json:"hostname"`
	Kernel   Kernel `json:"kernel"`
	OS       OS     `json:"os"`
	CPU      CPU    `json:"cpu"`
	// MemoryBytes is MemTotal of /proc/meminfo.
	MemoryBytes uint64      `json:"memoryBytes"`
	NUMA        []NUMANode  `json:"numa"`
	Network     []NetDevice `json:"network"` // InfiniBand and RoCE devices (/sys/class/infiniband)
	// Slurm is Slurm's version ("slurm 22.05.8"), or "not under Slurm".
	Slurm string `json:"slurm"`
	// Unavailable says, per field that could not be read (its JSON name: "kernel", "os",
	// "cpu", "memory", "numa", "network", "slurm"), why.
	Unavailable map[string]string `json:"unavailable"`
}

// Kernel is uname's release and version (/proc/sys/kernel/osrelease and version).
type Kernel struct {
	Release string `json:"release"` // 6.1.0-18-amd64
	Version string `json:"version"` // #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)
}

// OS is what /etc/os-release says.
type OS struct {
	PrettyName string `json:"prettyName"` // Debian GNU/Linux 12 (bookworm)
	ID         string `json:"id"`         // debian
	VersionID  string `json:"versionId"`  // 12
}

// CPU is the processor model and how many there are.
type CPU struct {
	Model   string `json:"model"`
	Sockets int    `json:"sockets"`
	Cores   int    `json:"cores"`   // physical cores, all sockets
	Threads int    `json:"threads"` // logical CPUs (hardware threads)
}

// NUMANode is one NUMA node: its CPUs (the kernel's list form, "0-63,128-191") and memory.
type NUMANode struct {
	ID          int    `json:"id"`
	CPUs        string `json:"cpus"`
	MemoryBytes uint64 `json:"memoryBytes"`
}

// NetDevice is an RDMA device of /sys/class/infiniband: a Mellanox/NVIDIA or Broadcom
// HCA, InfiniBand or RoCE (Ethernet link layer).
type NetDevice struct {
	Name     string `json:"name"` // mlx5_0
	Firmware string `json:"firmware"`
	BoardID  string `json:"boardId,omitempty"`
	NodeGUID string `json:"nodeGuid,omitempty"` // differs on every node; not compared
	// NetDevices are the Ethernet/IPoIB interfaces of the device (ib0, enp65s0f0np0).
	NetDevices []string `json:"netDevices,omitempty"`
	Ports      []Port   `json:"ports"`
}

// Port is one port of an RDMA device.
type Port struct {
	Number    int    `json:"number"`
	State     string `json:"state"`     // ACTIVE, DOWN (the number of "4: ACTIVE" left out)
	Rate      string `json:"rate"`      // 400 Gb/sec (4X NDR)
	LinkLayer string `json:"linkLayer"` // InfiniBand, or Ethernet (RoCE)
}

// Kind is "InfiniBand", "RoCE" when every port is Ethernet, or "" without ports.
func (d NetDevice) Kind() string {
	kind := ""
	for _, p := range d.Ports {
		k := "InfiniBand"
		if p.LinkLayer == "Ethernet" {
			k = "RoCE"
		}
		if kind != "" && kind != k {
			return "InfiniBand/RoCE"
		}
		kind = k
	}
	return kind
}

package host

import "github.com/benchctl/benchctl/internal/hostfacts"

// The types of what Read returns: the node record's vocabulary (internal/hostfacts), named
// here for host's callers.
type (
	Facts     = hostfacts.Facts
	Kernel    = hostfacts.Kernel
	OS        = hostfacts.OS
	CPU       = hostfacts.CPU
	NUMANode  = hostfacts.NUMANode
	NetDevice = hostfacts.NetDevice
	Port      = hostfacts.Port
)

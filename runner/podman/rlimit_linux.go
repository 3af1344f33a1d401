//go:build linux

package podman

import (
	"os"

	"golang.org/x/sys/unix"
)

// hostLimits are this process's hard resource limits by ulimit name (nofile, nproc,
// memlock); a limit that is unlimited or cannot be read is absent.
func hostLimits() map[string]uint64 {
	out := map[string]uint64{}
	for name, res := range map[string]int{"nofile": unix.RLIMIT_NOFILE, "nproc": unix.RLIMIT_NPROC, "memlock": unix.RLIMIT_MEMLOCK} {
		var l unix.Rlimit
		if unix.Getrlimit(res, &l) == nil && l.Max != unix.RLIM_INFINITY {
			out[name] = l.Max
		}
	}
	return out
}

// canRaiseLimits reports whether this process may raise hard limits (CAP_SYS_RESOURCE):
// root on a host, not root in many containers and sandboxes, never a user.
func canRaiseLimits() bool {
	b, err := os.ReadFile("/proc/self/status")
	return err == nil && hasCapSysResource(b)
}

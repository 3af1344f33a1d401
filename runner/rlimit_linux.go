//go:build linux

package runner

import (
	"os"
	"strconv"
	"strings"

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

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/self/status's CapEff.
const capSysResource = 24

// canRaiseLimits reports whether this process may raise hard limits (CAP_SYS_RESOURCE):
// root on a host, not root in many containers and sandboxes, never a user.
func canRaiseLimits() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<capSysResource) != 0
		}
	}
	return false
}

package runner

import (
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
	"github.com/moby/moby/api/types/container"

	"github.com/benchctl/benchctl/image"
)

// hostFacts are what adapting a container to the engine reads of this node (tests give
// their own).
type hostFacts struct {
	limits   map[string]uint64 // this process's hard limits (nofile, nproc, memlock); absent: unlimited
	canRaise bool              // this process may raise hard limits (CAP_SYS_RESOURCE)
}

// thisHost is this node's facts for a container of the engine id: the hard limits are the
// lower of this process's and the engine process's (where its socket names it), since the
// engine's runtime cannot exceed its own.
func thisHost(id image.Identity) hostFacts {
	h := hostFacts{limits: hostLimits(), canRaise: canRaiseLimits()}
	if id.PID > 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", id.PID)); err == nil {
			h.limits = lowerLimits(h.limits, parseProcLimits(b))
		}
	}
	return h
}

// procLimitNames are /proc/PID/limits' names of the limits adaptToEngine reads.
var procLimitNames = map[string]string{"Max open files": "nofile", "Max processes": "nproc", "Max locked memory": "memlock"}

// parseProcLimits reads the hard limits of /proc/PID/limits (absent: unlimited).
func parseProcLimits(b []byte) map[string]uint64 {
	out := map[string]uint64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		for label, name := range procLimitNames {
			rest, ok := strings.CutPrefix(line, label+" ")
			if !ok {
				continue
			}
			f := strings.Fields(rest)
			if len(f) < 2 {
				continue
			}
			if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				out[name] = v
			}
		}
	}
	return out
}

// lowerLimits is the lower of a's and b's limit by name (absent: unlimited).
func lowerLimits(a, b map[string]uint64) map[string]uint64 {
	out := maps.Clone(a)
	for k, v := range b {
		if old, ok := out[k]; !ok || v < old {
			out[k] = v
		}
	}
	return out
}

// podmanDefaultLimits are the ulimits Podman gives a container whose request names none
// (its default is 1048576 open files and 4194304 processes where it runs as root). Docker
// gives none: its containers inherit dockerd's.
var podmanDefaultLimits = []string{"nofile", "nproc"}

// adaptToEngine changes a container's settings where the engine differs from Docker's
// Engine, or returns an error naming the engine where the container cannot run there.
//
// Podman: a container that asks for no nofile or nproc limit gets Podman's own defaults
// (1048576 and 4194304 as root), which the OCI runtime cannot set where the hard limit is
// lower and raising it is not allowed (no CAP_SYS_RESOURCE: a rootless engine, root in a
// container or sandbox): the start fails with "error setting rlimit type 7: operation not
// permitted". So where this process may not raise its limits, the container asks for
// this process's hard limits instead (the most it can have). A limit the manifest asks for
// above them cannot be given by a rootless engine: refused, saying so.
func adaptToEngine(id image.Identity, hc *container.HostConfig, h hostFacts) error {
	if !id.Podman() {
		return nil
	}
	asked := map[string]*units.Ulimit{}
	for _, u := range hc.Ulimits {
		asked[u.Name] = u
	}
	if id.Rootless {
		for _, u := range hc.Ulimits {
			hard, ok := h.limits[u.Name]
			if !ok {
				continue
			}
			over := func(v int64) bool { return v < 0 || uint64(v) > hard } // -1: unlimited
			if over(u.Soft) || over(u.Hard) {
				return &EngineLimitError{Engine: id, Name: u.Name, Soft: u.Soft, Hard: u.Hard, Max: hard}
			}
		}
	}
	if h.canRaise && !id.Rootless {
		return nil
	}
	for _, name := range podmanDefaultLimits {
		hard, ok := h.limits[name]
		if _, set := asked[name]; set || !ok {
			continue
		}
		hc.Ulimits = append(hc.Ulimits, &units.Ulimit{Name: name, Soft: int64(hard), Hard: int64(hard)})
	}
	return nil
}

// EngineLimitError is a ulimit the manifest asks for that the engine cannot give: above the
// hard limit, which a rootless engine cannot raise.
type EngineLimitError struct {
	Engine     image.Identity
	Name       string
	Soft, Hard int64 // -1: unlimited
	Max        uint64
}

func (e *EngineLimitError) Error() string {
	lim := func(v int64) string {
		if v < 0 {
			return "unlimited"
		}
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("container.ulimits.%s asks for %s:%s, above this node's hard limit %d, which a rootless %s engine cannot raise: lower it to at most %d, or raise the user's limit (/etc/security/limits.conf, or LimitNOFILE=/LimitMEMLOCK= of the user's podman.service) and restart the engine",
		e.Name, lim(e.Soft), lim(e.Hard), e.Max, e.Engine.Name, e.Max)
}

// InvalidInput marks the limit as one the manifest cannot have here (exit 4).
func (e *EngineLimitError) InvalidInput() bool { return true }

// startHint adds what to do to an engine's refusal to create or start a container, where
// benchctl knows the cause: a resource limit the OCI runtime could not set, or the host's
// message queues missing for a rootless engine's host IPC.
func startHint(id image.Identity, err error) error {
	switch {
	case err == nil:
		return err
	case strings.Contains(err.Error(), "error setting rlimit"):
		return fmt.Errorf("%w (the engine, %s, could not give the container a resource limit above the hard limit it runs under: lower container.ulimits, or raise the limit where the engine starts)", err, id)
	case strings.Contains(err.Error(), "/dev/mqueue") && id.Podman():
		return fmt.Errorf("%w (%s gives a container the host's IPC (container.ipc: host) by mounting the host's /dev/mqueue, which is not mounted here: mount -t mqueue mqueue /dev/mqueue as root, as systemd does at boot)", err, id)
	}
	return err
}

package podman

import (
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
)

// HostFacts are what bounds a container's resource limits on an engine (tests give their
// own).
type HostFacts struct {
	limits   map[string]uint64 // hard limits (nofile, nproc, memlock); absent: unlimited
	canRaise bool              // the engine may raise hard limits (CAP_SYS_RESOURCE)
	// unknown is why the engine's limits are not known ("": they are): a rootful engine
	// whose process benchctl cannot see. limits is then empty and canRaise false.
	unknown string
}

// ThisHost is the facts of a container of the engine id on this node (see LimitFacts).
func ThisHost(id image.Identity) HostFacts {
	if !id.Podman() {
		// Only Podman's containers' limits depend on them (AdaptToEngine, CheckEngineLimits):
		// reading the engine's /proc files for Docker cost every run 1-2 ms for nothing.
		return HostFacts{limits: map[string]uint64{}}
	}
	return LimitFacts(id, Self(), os.ReadFile)
}

// Self is this process's facts: its hard limits, and whether it may raise them.
func Self() HostFacts { return HostFacts{limits: hostLimits(), canRaise: canRaiseLimits()} }

// Limits are the hard limits by ulimit name (nofile, nproc, memlock); absent: unlimited.
func (h HostFacts) Limits() map[string]uint64 { return h.limits }

// Unknown is why the engine's limits are not known ("": they are).
func (h HostFacts) Unknown() string { return h.unknown }

// LimitFacts is what bounds a container's limits on the engine id, whose process is id.PID
// (what its unix socket's SO_PEERCRED names; readProc reads /proc files); self is this
// process's facts.
//
// A rootless engine runs as the user: the lower of the user's limits and the engine
// process's (where it is known), and it may not raise them. A rootful engine's containers
// get what the engine process may give, whoever calls it: its limits and its CAP_SYS_RESOURCE
// (/proc/PID/limits and status), never the calling user's. Where the engine's process is not
// known (no peer pid, another pid namespace, or socket activation, where the socket's peer is
// systemd, which hands the connection to the engine it starts), the facts say so instead of
// taking systemd's or the user's limits.
func LimitFacts(id image.Identity, self HostFacts, readProc func(string) ([]byte, error)) HostFacts {
	eng, why := engineProcess(id.PID, readProc)
	if id.Rootless {
		h := HostFacts{limits: self.limits}
		if why == "" {
			h.limits = lowerLimits(self.limits, eng.limits)
		}
		return h
	}
	if why != "" {
		return HostFacts{limits: map[string]uint64{}, unknown: why}
	}
	return eng
}

// engineProcess reads the limits and CAP_SYS_RESOURCE of the engine's process pid, or says
// why they cannot be known.
func engineProcess(pid int, readProc func(string) ([]byte, error)) (HostFacts, string) {
	if pid <= 0 {
		return HostFacts{}, "the engine's socket did not name its process (not a local unix socket, or a process of another pid namespace): the engine's resource limits are not known"
	}
	comm, err := readProc(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return HostFacts{}, fmt.Sprintf("the engine's process %d cannot be read (%v): its resource limits are not known", pid, err)
	}
	name := strings.TrimSpace(string(comm))
	if pid == 1 || name == "systemd" || name == "init" {
		return HostFacts{}, fmt.Sprintf("the socket is held by %s (pid %d), which starts the engine when it is first used (socket activation): the engine's own resource limits are not known", name, pid)
	}
	lim, err := readProc(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return HostFacts{}, fmt.Sprintf("reading the limits of the engine's process %d (%s): %v: its resource limits are not known", pid, name, err)
	}
	st, err := readProc(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return HostFacts{}, fmt.Sprintf("reading the status of the engine's process %d (%s): %v: its resource limits are not known", pid, name, err)
	}
	return HostFacts{limits: parseProcLimits(lim), canRaise: hasCapSysResource(st)}, ""
}

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/PID/status's CapEff.
const capSysResource = 24

// hasCapSysResource reports whether /proc/PID/status's CapEff holds CAP_SYS_RESOURCE.
func hasCapSysResource(status []byte) bool {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<capSysResource) != 0
		}
	}
	return false
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

// AdaptToEngine changes a container's settings where the engine differs from Docker's
// Engine, or returns an error naming the engine where the container cannot run there.
//
// Podman: a container that asks for no nofile or nproc limit gets Podman's own defaults
// (1048576 and 4194304 as root), which the OCI runtime cannot set where the hard limit is
// lower and raising it is not allowed (no CAP_SYS_RESOURCE: a rootless engine, root in a
// container or sandbox): the start fails with "error setting rlimit type 7: operation not
// permitted". So where this process may not raise its limits, the container asks for
// the engine's hard limits instead (the most it can have; see limitFacts). A limit the manifest asks for
// above them cannot be given by a rootless engine: refused, saying so.
func AdaptToEngine(id image.Identity, p *workload.Spec, h HostFacts) error {
	if !id.Podman() {
		return nil
	}
	asked := map[string]bool{}
	for _, u := range p.Ulimits {
		asked[u.Name] = true
	}
	for _, u := range p.Ulimits {
		if err := overEngineLimit(id, u.Name, u.Soft, u.Hard, h); err != nil {
			return err
		}
	}
	if !id.Rootless && (h.canRaise || h.unknown != "") {
		// A rootful engine that may raise limits gives Podman's defaults; one whose limits are
		// not known is left to them too (root normally may; startHint explains a refusal).
		return nil
	}
	for _, name := range podmanDefaultLimits {
		hard, ok := h.limits[name]
		if _, set := asked[name]; set || !ok {
			continue
		}
		p.Ulimits = append(p.Ulimits, manifest.Limit{Name: name, Soft: int64(hard), Hard: int64(hard)})
	}
	return nil
}

// overEngineLimit is an *EngineLimitError where a rootless Podman engine cannot give the
// ulimit name soft:hard (-1: unlimited), else nil.
func overEngineLimit(id image.Identity, name string, soft, hard int64, h HostFacts) error {
	if !id.Podman() || !id.Rootless {
		return nil
	}
	most, ok := h.limits[name]
	if !ok {
		return nil
	}
	over := func(v int64) bool { return v < 0 || uint64(v) > most }
	if over(soft) || over(hard) {
		return &EngineLimitError{Engine: id, Name: name, Soft: soft, Hard: hard, Max: most}
	}
	return nil
}

// CheckEngineLimits refuses, before the image phase, a benchmark's ulimit that the engine
// cannot give (the refusal adaptToEngine makes at container create), naming the benchmark.
func CheckEngineLimits(id image.Identity, m *manifest.Manifest, benches []manifest.Benchmark, h HostFacts) error {
	for _, b := range benches {
		ctr := m.Container
		if b.Container != nil { // a MAD model's additional_docker_run_options
			ctr = *b.Container
		}
		for _, u := range ctr.Ulimits {
			if err := overEngineLimit(id, u.Name, u.Soft, u.Hard, h); err != nil {
				return fmt.Errorf("benchmark %s: %w", b.Name, err)
			}
		}
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
	return fmt.Sprintf("container.ulimits.%s asks for %s:%s, above this node's hard limit %d, which rootless %s cannot raise: lower it to at most %d, or raise the user's limit (/etc/security/limits.conf, or LimitNOFILE=/LimitMEMLOCK= of the user's podman.service) and restart the engine",
		e.Name, lim(e.Soft), lim(e.Hard), e.Max, e.Engine.Name, e.Max)
}

// InvalidInput marks the limit as one the manifest cannot have here (exit 4).
func (e *EngineLimitError) InvalidInput() bool { return true }

// StartHint adds what to do to an engine's refusal to create or start a container, where
// benchctl knows the cause: a resource limit the OCI runtime could not set, or the host's
// message queues missing for a rootless engine's host IPC.
func StartHint(id image.Identity, err error) error {
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

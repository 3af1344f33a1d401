package podman

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"

	units "github.com/docker/go-units"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
)

var (
	podmanRootful  = image.Identity{Kind: image.KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41"}
	podmanRootless = image.Identity{Kind: image.KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41", Rootless: true}
	dockerEngine   = image.Identity{Kind: image.KindDocker, Name: "Docker Engine", Version: "20.10.24", APIVersion: "1.41"}
)

// hostConfigWith is a process asking for ulimits u.
func hostConfigWith(u ...*units.Ulimit) *workload.Spec {
	p := &workload.Spec{}
	for _, l := range u {
		p.Ulimits = append(p.Ulimits, manifest.Limit{Name: l.Name, Soft: l.Soft, Hard: l.Hard})
	}
	return p
}

// ulimitsOf is the ulimits the engine gets for p, as docker writes them (nofile=1024:4096).
func ulimitsOf(p *workload.Spec) string {
	_, hc := engine.Config(*p)
	var s []string
	for _, u := range hc.Ulimits {
		s = append(s, u.String())
	}
	return strings.Join(s, " ")
}

// Podman gives a container that asks for no nofile/nproc limit 1048576 and 4194304 (as
// root): where the hard limit is lower and cannot be raised, runc fails the start with
// "error setting rlimit type 7: operation not permitted" (seen on the testbed). The
// container asks for the hard limits instead; Docker's containers are left as they are.
func TestAdaptToEngineLimits(t *testing.T) {
	low := map[string]uint64{"nofile": 20000, "nproc": 32768, "memlock": 8 << 20}
	tests := []struct {
		name string
		id   image.Identity
		h    HostFacts
		ask  []*units.Ulimit
		want string
	}{
		{"docker: none added", dockerEngine, HostFacts{limits: low}, nil, ""},
		{"podman rootful, cannot raise", podmanRootful, HostFacts{limits: low}, nil, "nofile=20000:20000 nproc=32768:32768"},
		{"podman rootful, may raise: Podman's defaults", podmanRootful, HostFacts{limits: low, canRaise: true}, nil, ""},
		{"podman rootless", podmanRootless, HostFacts{limits: low, canRaise: true}, nil, "nofile=20000:20000 nproc=32768:32768"},
		{"podman: unlimited stays Podman's", podmanRootful, HostFacts{limits: map[string]uint64{}}, nil, ""},
		{"podman: the manifest's own kept", podmanRootful, HostFacts{limits: low}, []*units.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}}, "nofile=1024:4096 nproc=32768:32768"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc := hostConfigWith(tt.ask...)
			if err := AdaptToEngine(tt.id, hc, tt.h); err != nil {
				t.Fatal(err)
			}
			if got := ulimitsOf(hc); got != tt.want {
				t.Errorf("ulimits = %q, want %q", got, tt.want)
			}
		})
	}
}

// A rootless engine cannot give a limit above the user's hard limit: refused before the
// container is made, naming the limit, the engine and what to do.
func TestAdaptToEngineRefusesLimitsRootlessCannotGive(t *testing.T) {
	h := HostFacts{limits: map[string]uint64{"nofile": 20000, "memlock": 8 << 20}}
	for _, u := range []*units.Ulimit{{Name: "memlock", Soft: -1, Hard: -1}, {Name: "nofile", Soft: 1024, Hard: 1048576}, {Name: "nofile", Soft: 30000, Hard: 20000}} {
		hc := hostConfigWith(u)
		err := AdaptToEngine(podmanRootless, hc, h)
		var le *EngineLimitError
		if !errors.As(err, &le) || exitcode.Of(err) != exitcode.Invalid {
			t.Fatalf("%s: err = %v, want an *EngineLimitError (exit 4)", u, err)
		}
		for _, s := range []string{"container.ulimits." + u.Name, "rootless Podman Engine", "limits.conf"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q lacks %q", err, s)
			}
		}
		// rootful may raise it: left to the engine.
		if err := AdaptToEngine(podmanRootful, hostConfigWith(u), h); err != nil {
			t.Errorf("rootful %s: %v", u, err)
		}
	}
	// Within the limits: fine.
	if err := AdaptToEngine(podmanRootless, hostConfigWith(&units.Ulimit{Name: "nofile", Soft: 20000, Hard: 20000}), h); err != nil {
		t.Error(err)
	}
}

// /proc/PID/limits as Linux 6.x writes it: the engine's limits bound its containers'.
func TestParseProcLimits(t *testing.T) {
	const limits = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max processes             32768                32768                processes 
Max open files            1024                 20000                files     
Max locked memory         8388608              8388608              bytes     
Max address space         unlimited            unlimited            bytes     
`
	got := parseProcLimits([]byte(limits))
	if len(got) != 3 || got["nofile"] != 20000 || got["nproc"] != 32768 || got["memlock"] != 8388608 {
		t.Fatalf("parseProcLimits = %v", got)
	}
	if got := parseProcLimits([]byte("Max open files unlimited unlimited files\n" + strings.Repeat("x", 6000) + "\n")); len(got) != 0 {
		t.Errorf("unlimited: %v, want none", got)
	}
	low := lowerLimits(map[string]uint64{"nofile": 50000, "nproc": 1000}, got)
	if low["nofile"] != 20000 || low["nproc"] != 1000 || low["memlock"] != 8388608 {
		t.Errorf("lowerLimits = %v", low)
	}
	low = lowerLimits(map[string]uint64{"nofile": 50000}, map[string]uint64{"nofile": 20000, "nproc": 5})
	if low["nofile"] != 20000 || low["nproc"] != 5 {
		t.Errorf("lowerLimits = %v", low)
	}
}

// A start the runtime refused for a limit says what to do.
func TestStartHint(t *testing.T) {
	err := StartHint(podmanRootful, errors.New("runc create failed: error setting rlimits for ready process: error setting rlimit type 7: operation not permitted"))
	if !strings.Contains(err.Error(), "Podman Engine 4.3.1") || !strings.Contains(err.Error(), "lower container.ulimits") {
		t.Errorf("startHint = %v", err)
	}
	err = StartHint(podmanRootless, errors.New("Error response from daemon: container create: statfs /dev/mqueue: no such file or directory"))
	if !strings.Contains(err.Error(), "mount -t mqueue mqueue /dev/mqueue") || !strings.Contains(err.Error(), "rootless") {
		t.Errorf("startHint = %v", err)
	}
	other := errors.New("no such image")
	if StartHint(podmanRootful, other) != other {
		t.Error("another error changed")
	}
}

// procOf is a /proc with one process: pid, its command name, limits and CapEff.
func procOf(pid, comm, limits, capEff string) func(string) ([]byte, error) {
	return filesOf(map[string]string{
		"/proc/" + pid + "/comm":   comm + "\n",
		"/proc/" + pid + "/limits": limits,
		"/proc/" + pid + "/status": "Name:\t" + comm + "\nCapEff:\t" + capEff + "\n",
	})
}

const (
	rootLimits = "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max processes             unlimited            unlimited            processes \n" +
		"Max open files            1048576              1048576              files     \n" +
		"Max locked memory         unlimited            unlimited            bytes     \n"
	userLimits = "Max processes             4096                 4096                 processes \n" +
		"Max open files            1024                 4096                 files     \n" +
		"Max locked memory         65536                65536                bytes     \n"
	allCaps = "000001ffffffffff"
)

// A rootful engine's containers are bounded by the engine process's limits and
// capabilities, not by those of the user who runs benchctl: a user on a rootful socket does
// not give the container its own nofile/nproc.
func TestLimitFactsRootful(t *testing.T) {
	user := HostFacts{limits: map[string]uint64{"nofile": 4096, "nproc": 4096, "memlock": 65536}}
	id := podmanRootful
	id.PID = 4242
	h := LimitFacts(id, user, procOf("4242", "podman", rootLimits, allCaps))
	if !h.canRaise || h.limits["nofile"] != 1048576 || h.unknown != "" {
		t.Fatalf("facts = %+v, want the engine's: may raise, nofile 1048576", h)
	}
	if _, ok := h.limits["nproc"]; ok {
		t.Errorf("nproc = %d, want unlimited (the engine's)", h.limits["nproc"])
	}
	hc := hostConfigWith()
	if err := AdaptToEngine(id, hc, h); err != nil || ulimitsOf(hc) != "" {
		t.Errorf("adaptToEngine: %q, %v; want Podman's defaults (no ulimits added)", ulimitsOf(hc), err)
	}
	// A rootful engine without CAP_SYS_RESOURCE (root in a container): its own hard limits.
	h = LimitFacts(id, user, procOf("4242", "podman", userLimits, "00000000a80425fb"))
	if h.canRaise || h.limits["nofile"] != 4096 {
		t.Errorf("facts without CAP_SYS_RESOURCE = %+v", h)
	}
}

// With socket activation the socket's peer is systemd, not the engine: its limits are not
// taken for the engine's; the facts say they are not known, and the container keeps
// Podman's defaults rather than systemd's or the user's limits.
func TestLimitFactsSocketActivated(t *testing.T) {
	user := HostFacts{limits: map[string]uint64{"nofile": 4096, "nproc": 4096}}
	for _, tt := range []struct {
		pid, comm string
		why       string
	}{
		{"1", "systemd", "the socket is held by systemd (pid 1)"},
		{"1", "init", "the socket is held by init (pid 1)"},
		{"777", "systemd", "the socket is held by systemd (pid 777)"},
	} {
		id := podmanRootful
		id.PID, _ = strconv.Atoi(tt.pid)
		h := LimitFacts(id, user, procOf(tt.pid, tt.comm, userLimits, allCaps))
		if !strings.Contains(h.unknown, tt.why) || !strings.Contains(h.unknown, "not known") || len(h.limits) != 0 {
			t.Errorf("%s %s: facts = %+v, want not known: %q", tt.pid, tt.comm, h, tt.why)
		}
		hc := hostConfigWith()
		if err := AdaptToEngine(id, hc, h); err != nil || ulimitsOf(hc) != "" {
			t.Errorf("adaptToEngine: %q, %v; want no ulimits added", ulimitsOf(hc), err)
		}
	}
	id := podmanRootful
	h := LimitFacts(id, user, procOf("1", "systemd", userLimits, allCaps))
	if !strings.Contains(h.unknown, "did not name its process") {
		t.Errorf("no pid: facts = %+v", h)
	}
}

// A rootless engine runs as the user: the lower of the user's and the engine's limits.
func TestLimitFactsRootless(t *testing.T) {
	user := HostFacts{limits: map[string]uint64{"nofile": 2048, "nproc": 8192}, canRaise: true}
	id := podmanRootless
	id.PID = 4242
	h := LimitFacts(id, user, procOf("4242", "podman", userLimits, "0"))
	if h.canRaise || h.limits["nofile"] != 2048 || h.limits["nproc"] != 4096 || h.limits["memlock"] != 65536 {
		t.Errorf("facts = %+v", h)
	}
}

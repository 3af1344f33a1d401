package doctor

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

func filesOf(files map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

func checkNamed(t *testing.T, cs []Check, name string) Check {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, cs)
	return Check{}
}

// doctor on a rootless engine says what rootless cannot give: subordinate ids, memlock,
// cgroup delegation.
func TestRootlessChecks(t *testing.T) {
	base := rootlessSources{uid: 1000, user: "alice", limits: map[string]uint64{"memlock": 8 << 20}}
	t.Run("a user with ranges, cgroup v1", func(t *testing.T) {
		s := base
		s.readFile = filesOf(map[string]string{"/etc/subuid": "bob:100000:65536\nalice:165536:65536\n", "/etc/subgid": "1000:165536:65536\n"})
		cs := rootlessChecks(Options{rootless: s}, podmanRootless)
		for _, n := range []string{"rootless subuid", "rootless subgid"} {
			if c := checkNamed(t, cs, n); !c.OK || !strings.Contains(c.Detail, "65536 ids for alice") {
				t.Errorf("%s: %+v", n, c)
			}
		}
		if c := checkNamed(t, cs, "rootless memlock"); !c.OK || !strings.Contains(c.Detail, "8 MiB") || !strings.Contains(c.Detail, "RDMA") {
			t.Errorf("memlock: %+v", c)
		}
		if c := checkNamed(t, cs, "rootless cgroups"); !c.OK || !strings.Contains(c.Detail, "cgroup v1") {
			t.Errorf("cgroups: %+v", c)
		}
	})
	t.Run("no ranges, a manifest asking unlimited memlock, cgroup v2 delegated", func(t *testing.T) {
		s := base
		s.readFile = filesOf(map[string]string{"/etc/subuid": "alice:100000:1000\nmalformed\nalice:x:y\n",
			"/sys/fs/cgroup/cgroup.controllers":                                              "cpu memory pids\n",
			"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers": "memory pids\n"})
		m := &manifest.Manifest{Container: manifest.Container{Ulimits: []manifest.Limit{{Name: "memlock", Soft: -1, Hard: -1}}}}
		cs := rootlessChecks(Options{rootless: s, Manifest: m}, podmanRootless)
		if c := checkNamed(t, cs, "rootless subuid"); c.OK || !strings.Contains(c.Detail, "1000 ids") || !strings.Contains(c.Fix, "usermod --add-subuids") {
			t.Errorf("subuid: %+v", c)
		}
		if c := checkNamed(t, cs, "rootless subgid"); c.OK || !strings.Contains(c.Detail, "0 ids") {
			t.Errorf("subgid (no file): %+v", c)
		}
		if c := checkNamed(t, cs, "rootless memlock"); c.OK || !strings.Contains(c.Detail, "container.ulimits.memlock") || c.Fix == "" {
			t.Errorf("memlock: %+v", c)
		}
		if c := checkNamed(t, cs, "rootless cgroups"); !c.OK || c.Detail != "cgroup v2, delegated controllers: memory pids" {
			t.Errorf("cgroups: %+v", c)
		}
	})
	t.Run("unlimited memlock", func(t *testing.T) {
		s := base
		s.limits = map[string]uint64{}
		s.readFile = func(string) ([]byte, error) { return nil, errors.New("no") }
		if c := checkNamed(t, rootlessChecks(Options{rootless: s}, podmanRootless), "rootless memlock"); !c.OK || c.Detail != "locked memory is unlimited" {
			t.Errorf("memlock: %+v", c)
		}
	})
	// Without limits given, doctor reads the engine process's, as a run does (one source):
	// a rootless engine's memlock is its own (here 64 KiB), whatever benchctl's shell has.
	t.Run("the engine process's memlock", func(t *testing.T) {
		s := rootlessSources{uid: 1000, user: "alice", readFile: procOf("4242", "podman", userLimits, "0")}
		id := podmanRootless
		id.PID = 4242
		if c := checkNamed(t, rootlessChecks(Options{rootless: s}, id), "rootless memlock"); !strings.Contains(c.Detail, "limited to 64 KiB") {
			t.Errorf("memlock: %+v", c)
		}
	})
}

var podmanRootless = image.Identity{Kind: image.KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41", Rootless: true}

// procOf is a /proc with one process: pid, its command name, limits and CapEff.
func procOf(pid, comm, limits, capEff string) func(string) ([]byte, error) {
	return filesOf(map[string]string{
		"/proc/" + pid + "/comm":   comm + "\n",
		"/proc/" + pid + "/limits": limits,
		"/proc/" + pid + "/status": "Name:\t" + comm + "\nCapEff:\t" + capEff + "\n",
	})
}

const userLimits = "Max processes             4096                 4096                 processes \n" +
	"Max open files            1024                 4096                 files     \n" +
	"Max locked memory         65536                65536                bytes     \n"

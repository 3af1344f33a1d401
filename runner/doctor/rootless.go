package doctor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/runner/podman"

	"github.com/benchctl/benchctl/image"
)

// rootlessSources are where doctor's rootless checks read (zero: this node's).
type rootlessSources struct {
	uid      int
	user     string
	readFile func(string) ([]byte, error)
	limits   map[string]uint64 // hard limits; absent: unlimited (nil: the engine's, as a run reads them)
}

// withDefaults fills what is not given: this node's files, user and the limits a container
// of the engine id gets (podman.LimitFacts, the same facts a run adapts its containers to).
func (s rootlessSources) withDefaults(id image.Identity) rootlessSources {
	if s.readFile == nil {
		s.readFile = os.ReadFile
		s.uid = os.Getuid()
		if u, err := user.Current(); err == nil {
			s.user = u.Username
		}
	}
	if s.limits == nil {
		s.limits = podman.LimitFacts(id, podman.Self(), s.readFile).Limits()
	}
	return s
}

// minSubIDs is the smallest subordinate id range with which images made as root unpack
// (their files may belong to any id up to 65535).
const minSubIDs = 65536

// rootlessChecks are what a rootless engine cannot give a benchmark, checked on this node:
// subordinate id ranges for the user (without them images whose files belong to other users
// do not unpack), the locked-memory limit (RDMA, as NCCL and RCCL use over InfiniBand or
// RoCE, registers memory: a rootless container cannot lift the user's limit) and cgroup v2
// with delegated controllers (on cgroup v1 a rootless engine sets no resource limits).
func rootlessChecks(o Options, id image.Identity) []Check {
	s := o.rootless.withDefaults(id)
	var out []Check
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		n := subIDs(s, f)
		c := Check{Name: "rootless " + strings.TrimPrefix(f, "/etc/"), OK: n >= minSubIDs,
			Detail: fmt.Sprintf("%s has %d ids for %s (uid %d)", f, n, cmpUser(s), s.uid)}
		if !c.OK {
			c.Fix = fmt.Sprintf("give the user a range of 65536 or more: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s, then podman system migrate", cmpUser(s))
		}
		out = append(out, c)
	}
	memlock := Check{Name: "rootless memlock", OK: true}
	if hard, ok := s.limits["memlock"]; ok {
		memlock.Detail = fmt.Sprintf("locked memory is limited to %s (hard): a %s container cannot raise it; RDMA (NCCL/RCCL over InfiniBand or RoCE) wants unlimited", byteSize(hard), id.Name)
		if want, asked := manifestUlimit(o, "memlock"); asked && (want < 0 || uint64(want) > hard) {
			memlock.OK = false
			memlock.Detail = fmt.Sprintf("the manifest's container.ulimits.memlock asks for more than the user's hard limit %s, which a rootless %s engine cannot raise", byteSize(hard), id.Name)
		}
		if !memlock.OK {
			memlock.Fix = "raise the user's memlock limit (memlock unlimited in /etc/security/limits.conf, or LimitMEMLOCK=infinity for the user's podman.service) and restart the engine, or use a rootful engine"
		}
	} else {
		memlock.Detail = "locked memory is unlimited"
	}
	out = append(out, memlock)
	cg := Check{Name: "rootless cgroups", OK: true}
	switch ctl, err := s.readFile(fmt.Sprintf("/sys/fs/cgroup/user.slice/user-%d.slice/user@%d.service/cgroup.controllers", s.uid, s.uid)); {
	case err == nil:
		cg.Detail = "cgroup v2, delegated controllers: " + strings.Join(strings.Fields(string(ctl)), " ")
	case fileExists(s, "/sys/fs/cgroup/cgroup.controllers"):
		cg.Detail = "cgroup v2 without a delegated user slice (no systemd user session): the engine sets no resource limits (benchctl asks for none)"
	default:
		cg.Detail = "cgroup v1: a rootless engine sets no resource limits (benchctl asks for none)"
	}
	out = append(out, cg)
	return out
}

// subIDs counts the ids file gives the user (by name or uid).
func subIDs(s rootlessSources, file string) int64 {
	b, err := s.readFile(file)
	if err != nil {
		return 0
	}
	var n int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(f) != 3 || (f[0] != s.user && f[0] != strconv.Itoa(s.uid)) {
			continue
		}
		if c, err := strconv.ParseInt(f[2], 10, 64); err == nil && c > 0 && c < 1<<32 {
			n += c
		}
	}
	return n
}

func cmpUser(s rootlessSources) string {
	if s.user != "" {
		return s.user
	}
	return strconv.Itoa(s.uid)
}

func fileExists(s rootlessSources, p string) bool {
	_, err := s.readFile(p)
	return err == nil
}

// manifestUlimit is the hard limit the manifest asks for (-1: unlimited).
func manifestUlimit(o Options, name string) (int64, bool) {
	if o.Manifest == nil {
		return 0, false
	}
	for _, u := range o.Manifest.Container.Ulimits {
		if u.Name == name {
			return u.Hard, true
		}
	}
	return 0, false
}

// byteSize is n bytes for people: 8 MiB.
func byteSize(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

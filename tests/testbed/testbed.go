// Package testbed gives end-to-end tests access to the testbed started by up.sh: its nodes,
// their Docker Engine sockets, the shared directory and the Slurm configuration.
package testbed

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Testbed describes a running testbed, read from the env file up.sh writes.
type Testbed struct {
	Dir       string
	Nodes     []string          // n1, n2, ...
	Sockets   map[string]string // node -> DOCKER_HOST value
	SharedDir string
	Partition string
	SlurmConf string
	// BuildKitAddr is the address of the testbed's buildkitd.
	BuildKitAddr string
	// ShellImage is a base image with a shell (static busybox and bash) in every engine,
	// working in /myworkspace, for MAD-style models.
	ShellImage string
	// MPIImage is the image with Debian's Open MPI, MPICH, mpi4py and hpcc and the test
	// programs of tests/fixtures/mpi (/usr/local/bin: pingpong.py, ring.openmpi,
	// ring.mpich), the same id in every node's Docker Engine (mpi-image.sh).
	MPIImage string
	// Registry is the HOST:PORT of the testbed's registry without auth (plain HTTP on a
	// loopback address, which every engine accepts); empty when up.sh predates it.
	Registry string
	// RegistryLog is the registry's log file (its access log included), see RegistryBlobGets.
	RegistryLog string
	// AuthRegistry is the HOST:PORT of the registry with htpasswd auth: AuthRegistryUser and
	// the password in AuthRegistryPasswordFile (0600; see AuthRegistryPassword).
	AuthRegistry             string
	AuthRegistryUser         string
	AuthRegistryPasswordFile string
	// AuthRegistryLog is the log file of the registry with auth.
	AuthRegistryLog string
	// PodmanSockets and PodmanRootlessSockets are each node's Podman engines (DOCKER_HOST
	// values): a rootful one, and a rootless one of PodmanUser (podman-up.sh, podman.env
	// beside the env file); empty when they are not up.
	PodmanSockets         map[string]string
	PodmanRootlessSockets map[string]string
	PodmanUser            string
}

// EnvFile is where up.sh writes the testbed description.
func EnvFile() string {
	if f := os.Getenv("BENCHCTL_TESTBED_ENV"); f != "" {
		return f
	}
	dir := os.Getenv("BENCHCTL_TESTBED_DIR")
	if dir == "" {
		dir = "/var/tmp/bctb"
	}
	return filepath.Join(dir, "testbed.env")
}

// Require returns the testbed, or skips the test when there is none — except under
// CI=true, where a missing testbed fails the test: end-to-end tests must run in CI.
func Require(t testing.TB) *Testbed {
	t.Helper()
	tb, err := Read(EnvFile())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no testbed (CI=true requires one): %v; start it with tests/testbed/up.sh", err)
		}
		t.Skipf("SKIPPED: no testbed: %v (start it with `make testbed-up`, as root)", err)
	}
	return tb
}

// Read parses an env file of `export NAME=value` lines.
func Read(file string) (*Testbed, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok {
			vars[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if vars["BENCHCTL_TESTBED_DEMO"] == "1" {
		return nil, fmt.Errorf("%s: the testbed was started for the demo only (up.sh --demo: Slurm and the Docker Engines); start the rest with tests/testbed/up.sh", file)
	}
	tb := &Testbed{Dir: vars["BENCHCTL_TESTBED_DIR"], SharedDir: vars["BENCHCTL_TESTBED_SHARED_DIR"],
		Partition: vars["BENCHCTL_TESTBED_PARTITION"], SlurmConf: vars["SLURM_CONF"], Sockets: map[string]string{},
		BuildKitAddr: vars["BENCHCTL_TESTBED_BUILDKIT_ADDR"], ShellImage: vars["BENCHCTL_TESTBED_SHELL_IMAGE"], MPIImage: vars["BENCHCTL_TESTBED_MPI_IMAGE"],
		Registry: vars["BENCHCTL_TESTBED_REGISTRY"], RegistryLog: vars["BENCHCTL_TESTBED_REGISTRY_LOG"],
		AuthRegistry: vars["BENCHCTL_TESTBED_AUTH_REGISTRY"], AuthRegistryUser: vars["BENCHCTL_TESTBED_AUTH_REGISTRY_USER"],
		AuthRegistryPasswordFile: vars["BENCHCTL_TESTBED_AUTH_REGISTRY_PASSWORD_FILE"],
		AuthRegistryLog:          vars["BENCHCTL_TESTBED_AUTH_REGISTRY_LOG"]}
	tb.Nodes = strings.Split(vars["BENCHCTL_TESTBED_NODE_NAMES"], ",")
	socks := strings.Split(vars["BENCHCTL_TESTBED_SOCKETS"], ",")
	if len(tb.Nodes) == 0 || tb.Nodes[0] == "" || len(socks) != len(tb.Nodes) || tb.SharedDir == "" || tb.SlurmConf == "" {
		return nil, fmt.Errorf("%s is incomplete", file)
	}
	for i, n := range tb.Nodes {
		tb.Sockets[n] = socks[i]
	}
	tb.PodmanSockets, tb.PodmanRootlessSockets = map[string]string{}, map[string]string{}
	if pv, err := readExports(filepath.Join(filepath.Dir(file), "podman.env")); err == nil {
		root, rootless := strings.Split(pv["BENCHCTL_TESTBED_PODMAN_SOCKETS"], ","), strings.Split(pv["BENCHCTL_TESTBED_PODMAN_ROOTLESS_SOCKETS"], ",")
		if len(root) == len(tb.Nodes) && len(rootless) == len(tb.Nodes) && root[0] != "" && rootless[0] != "" {
			for i, n := range tb.Nodes {
				tb.PodmanSockets[n], tb.PodmanRootlessSockets[n] = root[i], rootless[i]
			}
			tb.PodmanUser = pv["BENCHCTL_TESTBED_PODMAN_USER"]
		}
	}
	return tb, nil
}

// RequirePodman returns the testbed with its Podman engines, or skips the test when they are
// not up — except under CI=true, where that fails the test.
func RequirePodman(t testing.TB) *Testbed {
	t.Helper()
	tb := Require(t)
	if len(tb.PodmanSockets) == 0 || tb.PodmanUser == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Podman engines in the testbed (CI=true requires them); start them with tests/testbed/up.sh (or podman-up.sh)")
		}
		t.Skipf("SKIPPED: no Podman engines in the testbed (start them with tests/testbed/podman-up.sh, as root)")
	}
	return tb
}

// readExports reads a file of `export NAME=value` lines.
func readExports(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = v
		}
	}
	return vars, nil
}

// Env returns the environment for Slurm commands (sbatch, squeue) against the testbed.
func (tb *Testbed) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+tb.SlurmConf)
}

// A build of benchctl for the tests, once per test binary.
type build struct {
	once sync.Once
	path string
	err  error
}

var dynamic, static, agent build

// Benchctl builds benchctl once per test binary into the shared directory (so every node
// sees the same binary, as on a real cluster) and returns its path.
func (tb *Testbed) Benchctl(t testing.TB) string {
	t.Helper()
	return tb.build(t, &dynamic, "benchctl-e2e-")
}

// BenchctlStatic is Benchctl's CGO-free build (CGO_ENABLED=0: a static binary that runs in
// an image holding nothing else, as in someone else's container).
func (tb *Testbed) BenchctlStatic(t testing.TB) string {
	t.Helper()
	return tb.build(t, &static, "benchctl-e2e-static-", "CGO_ENABLED=0")
}

// Agent is benchctl's remote-launch agent (static), for the MPI launchers: the jobs get it
// as $BENCHCTL_AGENT.
func (tb *Testbed) Agent(t testing.TB) string {
	t.Helper()
	return tb.buildPkg(t, &agent, "benchctl-agent-e2e-", "github.com/benchctl/benchctl/cmd/benchctl-agent", "CGO_ENABLED=0")
}

func (tb *Testbed) build(t testing.TB, b *build, prefix string, env ...string) string {
	t.Helper()
	return tb.buildPkg(t, b, prefix, "github.com/benchctl/benchctl/cmd/benchctl", env...)
}

func (tb *Testbed) buildPkg(t testing.TB, b *build, prefix, pkg string, env ...string) string {
	t.Helper()
	b.once.Do(func() {
		dir := filepath.Join(tb.SharedDir, "bin")
		if b.err = os.MkdirAll(dir, 0o755); b.err != nil {
			return
		}
		// One binary per checkout: two checkouts (git worktrees) testing against one
		// testbed at once must not replace each other's benchctl.
		wd, _ := os.Getwd()
		b.path = filepath.Join(dir, prefix+fmt.Sprintf("%x", sha256.Sum256([]byte(wd)))[:12])
		cmd := exec.Command("go", "build", "-trimpath", "-o", b.path, pkg)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// FreshDir returns an empty folder under the shared directory for one test, removed after.
func (tb *Testbed) FreshDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(tb.SharedDir, "e2e", strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	return dir
}

package testbed_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/tests/testbed"
)

// A testbed without Podman engines (no podman.env, or one naming fewer sockets than nodes)
// skips a Podman test, except under CI=true, where it fails: no Podman test can pass CI by
// being skipped. With podman.env complete, the test runs.
func TestRequirePodmanUnderCI(t *testing.T) {
	if os.Getenv("BENCHCTL_REQUIRE_PODMAN_CHILD") == "1" {
		// The child process this test starts: RequirePodman on the testbed its
		// environment names, as a subtest (no test of its own counts a pass for nothing).
		t.Run("child", func(t *testing.T) {
			testbed.RequirePodman(t)
			t.Log("PODMAN PRESENT")
		})
		return
	}
	dir := t.TempDir()
	env := filepath.Join(dir, "testbed.env")
	if err := os.WriteFile(env, []byte("export BENCHCTL_TESTBED_NODE_NAMES=n1,n2\nexport BENCHCTL_TESTBED_SOCKETS=unix:///a,unix:///b\n"+
		"export BENCHCTL_TESTBED_SHARED_DIR="+dir+"\nexport SLURM_CONF="+dir+"/slurm.conf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(ci string, fails bool) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequirePodmanUnderCI$/^child$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "BENCHCTL_REQUIRE_PODMAN_CHILD=1", "BENCHCTL_TESTBED_ENV="+env, "CI="+ci)
		out, err := cmd.CombinedOutput()
		if fails != (err != nil) {
			t.Errorf("CI=%q: %v\n%s", ci, err, out)
		}
		return string(out)
	}
	podmanEnv := filepath.Join(dir, "podman.env")
	for _, body := range []string{"", "export BENCHCTL_TESTBED_PODMAN_SOCKETS=unix:///p1\nexport BENCHCTL_TESTBED_PODMAN_ROOTLESS_SOCKETS=unix:///q1\nexport BENCHCTL_TESTBED_PODMAN_USER=u\n"} {
		if body != "" {
			if err := os.WriteFile(podmanEnv, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out := run("true", true); !strings.Contains(out, "CI=true requires them") || strings.Contains(out, "SKIP") {
			t.Errorf("under CI=true (podman.env %q) the test was not failed:\n%s", body, out)
		}
		if out := run("", false); !strings.Contains(out, "SKIPPED: no Podman engines") {
			t.Errorf("outside CI (podman.env %q) the test was not skipped:\n%s", body, out)
		}
	}
	full := "export BENCHCTL_TESTBED_PODMAN_SOCKETS=unix:///p1,unix:///p2\nexport BENCHCTL_TESTBED_PODMAN_ROOTLESS_SOCKETS=unix:///q1,unix:///q2\nexport BENCHCTL_TESTBED_PODMAN_USER=u\n"
	if err := os.WriteFile(podmanEnv, []byte(full), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("true", false); !strings.Contains(out, "PODMAN PRESENT") {
		t.Errorf("with every node's engines the test did not run:\n%s", out)
	}
}

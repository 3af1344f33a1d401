package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A testbed started for the demo (up.sh --demo) has no registries, BuildKit, images or
// Podman: the tests are told to start the rest instead of failing on what is missing.
func TestReadRefusesTheDemosTestbed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "testbed.env")
	env := "export BENCHCTL_TESTBED_DIR=/x\nexport BENCHCTL_TESTBED_NODE_NAMES=n1\nexport BENCHCTL_TESTBED_SOCKETS=unix:///x/n1/docker.sock\n" +
		"export BENCHCTL_TESTBED_SHARED_DIR=/x/shared\nexport SLURM_CONF=/x/slurm/slurm.conf\n"
	if err := os.WriteFile(file, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(file); err != nil {
		t.Fatalf("a whole testbed: %v", err)
	}
	if err := os.WriteFile(file, []byte("export BENCHCTL_TESTBED_DEMO=1\n"+env), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(file); err == nil || !strings.Contains(err.Error(), "start the rest with tests/testbed/up.sh") {
		t.Fatalf("the demo's testbed: %v", err)
	}
}

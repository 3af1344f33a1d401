package main

import (
	"os"
	"os/exec"
	"testing"
)

// asMainEnv makes the test binary run benchctl's main instead of the tests: the signal and
// memory tests start it as a child (see startBenchctl), so that they exercise the real
// signal handling and exit codes of the process.
const asMainEnv = "BENCHCTL_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// benchctlProcess is a command that runs this test binary as benchctl with args.
func benchctlProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "BENCHCTL_SHARED_DIR=", "PATH="+t.TempDir())
	return cmd
}

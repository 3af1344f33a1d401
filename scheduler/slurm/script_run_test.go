//go:build linux

package slurm

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// runScript runs the job script with a fake srun that logs its arguments and exits with
// runExit for the run and cleanupExit for the cleanup.
func runScript(t *testing.T, shared, runExit, cleanupExit string) (int, string) {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(bin, "srun.log")
	fake := "#!/bin/sh\necho \"$*\" >>" + Quote(log) + "\ncase \"$*\" in *' run '*) exit " + runExit + ";; *' cleanup '*) exit " + cleanupExit + ";; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	j := Job{Name: "t", Nodes: 3, Benchctl: "/opt/benchctl", Manifest: "/m.yaml", SharedDir: shared, SecretFile: "/s/tok.secret", OutputDir: "/s"}
	script, err := j.Script()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "SLURM_JOB_ID=42", "BENCHCTL_JOB_SECRET=from-the-login-node-env"}
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err, string(out))
	}
	calls, _ := os.ReadFile(log)
	return code, string(calls)
}

// The script ends with a cleanup on every node, after the run whatever its exit code, and
// exits with the run's exit code whatever the cleanup's.
func TestScriptCleansUpAndKeepsTheRunsExitCode(t *testing.T) {
	for _, c := range []struct{ run, cleanup string }{{"0", "0"}, {"3", "0"}, {"3", "1"}, {"0", "1"}, {"137", "0"}} {
		shared := t.TempDir()
		code, calls := runScript(t, shared, c.run, c.cleanup)
		if want := c.run; strconv.Itoa(code) != want {
			t.Errorf("run %s, cleanup %s: the script exited %d, want the run's %s", c.run, c.cleanup, code, want)
		}
		lines := strings.Split(strings.TrimSpace(calls), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "/opt/benchctl run --manifest /m.yaml") ||
			!strings.Contains(lines[1], "--ntasks-per-node=1 --kill-on-bad-exit=0 /opt/benchctl cleanup --job 42 --outcome lost") {
			t.Errorf("srun calls:\n%s", calls)
		}
		if st, err := os.Stat(jobdir.Layout{Shared: shared}.Job("42", 0).SbatchOut()); err != nil || st.IsDir() {
			t.Errorf("no sbatch.out in the job folder: %v", err)
		}
	}
}

// A link planted where the job folder goes (the next job id is easy to guess), or a
// folder of someone else, is refused before anything is written there or run.
func TestScriptRefusesAPlantedJobFolder(t *testing.T) {
	shared := t.TempDir()
	elsewhere := t.TempDir()
	os.MkdirAll(jobdir.Layout{Shared: shared}.Jobs(), 0o755)
	os.Symlink(elsewhere, jobdir.Layout{Shared: shared}.Job("42", 0).Path)
	code, calls := runScript(t, shared, "0", "0")
	if code != 4 || calls != "" {
		t.Fatalf("exit %d, srun calls %q: want 4 and none", code, calls)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("written through the link: %v", ents)
	}
	if os.Geteuid() != 0 {
		return
	}
	shared = t.TempDir()
	os.MkdirAll(jobdir.Layout{Shared: shared}.Job("42", 0).Path, 0o777)
	os.Chown(jobdir.Layout{Shared: shared}.Job("42", 0).Path, 65534, 65534)
	if code, calls := runScript(t, shared, "0", "0"); code != 4 || calls != "" {
		t.Fatalf("another user's folder: exit %d, srun calls %q", code, calls)
	}
}

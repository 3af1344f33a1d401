package testbed_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startNamed runs sleep under the command name name (a copy of the binary), so that its
// /proc/PID/comm is name cut to 15 bytes; it is killed when the test ends.
func startNamed(t *testing.T, name string) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	bin := sleep
	if name != "sleep" {
		b, err := os.ReadFile(sleep)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// alive runs pidfile.sh's alive PIDFILE NAME and reports whether it said yes.
func alive(t *testing.T, pidfile, name string) bool {
	t.Helper()
	cmd := exec.Command("bash", "-c", `. ./pidfile.sh && alive "$1" "$2"`, "bash", pidfile, name)
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		t.Errorf("alive %s %s printed %q", pidfile, name, out)
	}
	if err == nil {
		return true
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatal(err)
	}
	return false
}

func writePid(t *testing.T, dir, name, text string) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// A pid file whose number now belongs to another process (after a reboot, or when the
// daemons were killed without down.sh) is not the daemon: up.sh must start it again and
// down.sh must leave the stranger alone. This is how CI once found slurmd "running".
func TestAliveAsksWhatTheProcessIs(t *testing.T) {
	dir := t.TempDir()
	stranger := writePid(t, dir, "slurmd-n1.pid", strconv.Itoa(startNamed(t, "sleep"))+"\n")
	if alive(t, stranger, "slurmd") {
		t.Error("a pid file naming a sleep process is taken for a live slurmd")
	}
	if !alive(t, stranger, "sleep") {
		t.Error("a live sleep process is not alive as sleep")
	}

	// slurmdbd is not slurmd; buildkitd-v0.17.0 (comm cut to 15 bytes) is buildkitd.
	dbd := writePid(t, dir, "slurmdbd.pid", strconv.Itoa(startNamed(t, "slurmdbd")))
	if alive(t, dbd, "slurmd") {
		t.Error("slurmdbd is taken for slurmd")
	}
	if !alive(t, dbd, "slurmdbd") {
		t.Error("slurmdbd is not alive as slurmdbd")
	}
	bk := writePid(t, dir, "buildkitd.pid", strconv.Itoa(startNamed(t, "buildkitd-v0.17.0")))
	if !alive(t, bk, "buildkitd") {
		t.Error("buildkitd-v0.17.0 is not alive as buildkitd")
	}
	reg := writePid(t, dir, "registry.pid", strconv.Itoa(startNamed(t, "docker-registry")))
	if !alive(t, reg, "docker-registry") {
		t.Error("docker-registry is not alive as docker-registry")
	}

	// a process that has exited
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	if alive(t, writePid(t, dir, "gone.pid", strconv.Itoa(done.Process.Pid)), "true") {
		t.Error("an exited process is alive")
	}
}

// Whatever sits where a pid file should be is "not running", quietly: no error text, no hang.
func TestAliveOnMalformedPidFiles(t *testing.T) {
	dir := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	fifo := filepath.Join(dir, "fifo.pid")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.pid")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"missing":       filepath.Join(dir, "none.pid"),
		"empty":         writePid(t, dir, "empty.pid", ""),
		"text":          writePid(t, dir, "text.pid", "dockerd\n"),
		"negative":      writePid(t, dir, "neg.pid", "-1\n"),
		"zero":          writePid(t, dir, "zero.pid", "0\n"),
		"process group": writePid(t, dir, "group.pid", "-"+self+"\n"),
		"two numbers":   writePid(t, dir, "two.pid", self+" "+self+"\n"),
		"huge":          writePid(t, dir, "huge.pid", "99999999999999999999\n"),
		"long line":     writePid(t, dir, "long.pid", strings.Repeat("1", 6000)),
		"fifo":          fifo,
		"directory":     sub,
	}
	for what, f := range cases {
		start := time.Now()
		if alive(t, f, "sleep") || alive(t, f, filepath.Base(os.Args[0])) {
			t.Errorf("%s: alive", what)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: alive took %v (it must not block on a FIFO)", what, d)
		}
	}
}

// down.sh stops only the daemons it finds behind its pid files: a stranger whose pid a stale
// pid file names keeps running, and the stale file goes.
func TestDownLeavesStrangersAlone(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	if err := os.Mkdir(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	pid := startNamed(t, "sleep")
	for _, name := range []string{"dockerd-n1", "slurmd-n1", "slurmctld", "munged", "mariadb", "registry"} {
		writePid(t, pids, name+".pid", strconv.Itoa(pid)+"\n")
	}
	out, err := exec.Command("./down.sh", "--dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("down.sh: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "stopping") {
		t.Errorf("down.sh stopped a stranger:\n%s", out)
	}
	// a killed child stays as a zombie until waited for: ask for its state, not kill -0
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil || strings.Contains(string(stat), ") Z ") {
		t.Errorf("down.sh stopped the sleep process behind a stale pid file (%v): %s", err, stat)
	}
	left, _ := filepath.Glob(filepath.Join(pids, "*.pid"))
	if len(left) > 0 {
		t.Errorf("stale pid files left: %v", left)
	}
}

// runPidfile runs pidfile.sh's function fn with args and returns what it printed and
// whether it said yes.
func runPidfile(t *testing.T, fn string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"-c", `. ./pidfile.sh && "$@"`, "bash", fn}, args...)...)
	out, err := cmd.Output()
	if err == nil {
		return strings.TrimSpace(string(out)), true
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out)), false
}

// startPodmanLike runs a process named podman whose command line ends in unix://sock and
// which runs a second one like it (as a rootless service re-executes itself); it returns
// the outer pid. Both are killed when the test ends.
func startPodmanLike(t *testing.T, sock string) int {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bash)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "podman")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	inner := bin + ` -c 'sleep 300; :' unix://` + sock + `; :`
	cmd := exec.Command(bin, "-c", inner, "unix://"+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	// wait (bounded) for the inner one
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if out, _ := exec.Command("pgrep", "-P", strconv.Itoa(cmd.Process.Pid), "-x", "podman").Output(); len(out) > 0 {
			break
		}
	}
	return cmd.Process.Pid
}

// podman-up.sh signals, and takes for an engine, only the podman process that serves the
// socket as the expected user: a pid file naming any other process (planted, or left from
// before a reboot) names no engine, and the engine is found by what it is.
func TestPodmanServing(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "n1", "podman.sock")
	uid := strconv.Itoa(os.Getuid())
	outer := startPodmanLike(t, sock)
	other := startNamed(t, "podman") // a podman serving nothing of ours
	if _, ok := runPidfile(t, "serves", strconv.Itoa(other), sock, uid); ok {
		t.Error("a podman with another command line serves the socket")
	}
	if _, ok := runPidfile(t, "serves", strconv.Itoa(outer), sock, uid+"1"); ok {
		t.Error("a podman of another user serves the socket")
	}
	if _, ok := runPidfile(t, "serves", strconv.Itoa(outer), sock+"x", uid); ok {
		t.Error("a podman serves a socket whose path it only begins")
	}
	if _, ok := runPidfile(t, "serves", strconv.Itoa(outer), sock, uid); !ok {
		t.Error("the podman serving the socket is not taken for it")
	}
	planted := writePid(t, dir, "planted.pid", strconv.Itoa(other)+"\n")
	for _, pf := range []string{planted, writePid(t, dir, "self.pid", strconv.Itoa(os.Getpid())), filepath.Join(dir, "none.pid")} {
		if got, ok := runPidfile(t, "podman_serving", sock, uid, pf); !ok || got != strconv.Itoa(outer) {
			t.Errorf("podman_serving with %s = %q, %v; want the outer engine %d", filepath.Base(pf), got, ok, outer)
		}
	}
	if got, ok := runPidfile(t, "podman_serving", filepath.Join(dir, "n2", "podman.sock"), uid); ok {
		t.Errorf("podman_serving of a socket nothing serves = %q", got)
	}
}

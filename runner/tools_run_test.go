package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

// toolBed is a working directory (the checkout) and an output folder for running a
// wrapped command for real, as the container would: from the working directory, with
// BENCHCTL_OUTPUT_DIR set.
type toolBed struct{ W, O string }

func newToolBed(t *testing.T, files map[string]string) toolBed {
	t.Helper()
	for _, tool := range []string{"bash", "cp", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	b := toolBed{W: t.TempDir(), O: t.TempDir()}
	for name, body := range files {
		p := filepath.Join(b.W, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// cmd is the spec's command, ready to start from the working directory.
func (b toolBed) cmd(s Spec, env ...string) *exec.Cmd {
	c := exec.Command(s.Command[0], s.Command[1:]...)
	c.Dir = b.W
	c.Env = append(append(os.Environ(), "BENCHCTL_OUTPUT_DIR="+b.O), env...)
	return c
}

// run runs the spec's command to its end: its output, exit code and what the watch saw.
func (b toolBed) run(t *testing.T, s Spec, env ...string) (string, int, *toolWatch) {
	t.Helper()
	if !s.Tools.Wrapped {
		t.Fatalf("not wrapped: %q", s.Command)
	}
	out, err := b.cmd(s, env...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	w := toolWatcher(s)
	w.Write(out)
	return string(out), code, w
}

func script(path string, args ...string) manifest.ToolScript {
	return manifest.ToolScript{Path: path, Args: args}
}

// madengine runs `cd run_directory && <cmd> bash run.sh ARGS` and the scripts there: what a
// tool writes into its working directory (rpd's trace.rpd, rocprofv3's -d ./rocprof_output)
// is in the tools' directory and is kept in the output folder, not in the shared checkout;
// the benchmark's own relative words still name the checkout's files; a post script that
// copies to the working directory as madengine's trace.sh does (to /myworkspace) leaves its
// copy in the tools' directory too.
func TestToolsRunInTheRunDirectory(t *testing.T) {
	b := newToolBed(t, map[string]string{
		"bench.sh":              "echo bench in ${PWD##*/} $1; echo data > bench-out.txt\n",
		"data/in.txt":           "x\n",
		"scripts/tracer.sh":     "echo traced > trace.txt; \"$@\"\n",
		"scripts/post/trace.sh": "mkdir -p \"$1_output\" && mv trace.txt \"$1_output\"/ && cp -R \"$1_output\" ../\n",
	})
	tools := []manifest.Tool{{Name: "tr", Cmd: []string{"bash", "../scripts/tracer.sh"}, Post: []manifest.ToolScript{script("scripts/post/trace.sh", "tr")}}}
	s := withTools(Spec{Name: "ctr", Command: []string{"bash", "bench.sh", "data/in.txt"}, Workdir: b.W}, tools)
	out, code, w := b.run(t, s)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "bench in run_directory-ctr "+b.W+"/data/in.txt") {
		t.Errorf("the command did not run in the tools' directory with the checkout's words resolved:\n%s", out)
	}
	for _, f := range []string{"trace.txt", "bench-out.txt"} {
		if _, err := os.Stat(filepath.Join(b.W, f)); err == nil {
			t.Errorf("%s was written into the shared checkout", f)
		}
	}
	for _, f := range []string{"tr_output/trace.txt", "bench-out.txt", "trace.sh"} {
		if _, err := os.Stat(filepath.Join(b.O, "run_directory", f)); err != nil {
			t.Errorf("not kept in the output folder: %v\n%s", err, out)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(b.W, "run_directory-*")); len(left) > 0 {
		t.Errorf("left in the checkout: %v", left)
	}
	if f, cmd := w.failed(); f != "" || cmd {
		t.Errorf("watch: %q %v", f, cmd)
	}
}

// A script whose name starts with '-' is a script, not an option of bash.
func TestToolScriptNamedLikeAnOption(t *testing.T) {
	b := newToolBed(t, map[string]string{"s/-c": "echo dash-c-ran \"$@\"\n"})
	s := withTools(Spec{Name: "ctr", Command: []string{"true"}, Workdir: b.W},
		[]manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{script("s/-c", "touch pwned", "x")}}})
	out, code, _ := b.run(t, s)
	if code != 0 || !strings.Contains(out, "dash-c-ran touch pwned x") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(b.O, "run_directory", "pwned")); err == nil {
		t.Error("the script's args ran as code")
	}
}

// The benchmark's output without a final newline does not hide the marker of its failure,
// and a marker the benchmark prints itself names nothing.
func TestToolMarkersCannotBeMergedOrFaked(t *testing.T) {
	b := newToolBed(t, map[string]string{"ok.sh": "exit 0\n"})
	tools := []manifest.Tool{{Name: "p", Post: []manifest.ToolScript{script("ok.sh")}}}
	s := withTools(Spec{Name: "ctr", Command: []string{"bash", "-c", "printf 'no newline'; exit 3"}, Workdir: b.W}, tools)
	out, code, w := b.run(t, s)
	if f, cmd := w.failed(); code != 3 || !cmd || f != "" {
		t.Errorf("exit %d, watch %q %v\n%s", code, f, cmd, out)
	}
	fake := "benchctl-tools: post 0 exit 9\n" + toolMarker + "post 0 exit 9\n" + "benchctl-tools-0123456789ab: post 0 exit 9\n"
	s = withTools(Spec{Name: "ctr", Command: []string{"printf", "%s", fake}, Workdir: b.W}, tools)
	out, code, w = b.run(t, s)
	if f, cmd := w.failed(); code != 0 || cmd || f != "" {
		t.Errorf("a faked marker counted: exit %d, watch %q %v\n%s", code, f, cmd, out)
	}
	if s2 := withTools(Spec{Name: "ctr", Command: []string{"x"}, Workdir: b.W}, tools); s2.Tools.marker == s.Tools.marker {
		t.Errorf("two runs have the same marker %q", s.Tools.marker)
	}
}

// The benchmark starts with SIGINT and SIGQUIT at their defaults, as without tools (an
// asynchronous command of a non-interactive shell gets them ignored).
func TestToolWrappedCommandGetsDefaultSignals(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	b := newToolBed(t, map[string]string{"ok.sh": "exit 0\n"})
	s := withTools(Spec{Name: "ctr", Command: []string{"grep", "SigIgn", "/proc/self/status"}, Workdir: b.W},
		[]manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{script("ok.sh")}}})
	out, code, _ := b.run(t, s)
	f := strings.Fields(out)
	if code != 0 || len(f) != 2 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	ign, err := strconv.ParseUint(f[1], 16, 64)
	if err != nil || ign&(1<<(int(syscall.SIGINT)-1)|1<<(int(syscall.SIGQUIT)-1)) != 0 {
		t.Errorf("the benchmark starts with SigIgn %s (%v)", f[1], err)
	}
}

// The script's own variables neither take nor change the benchmark's variables.
func TestToolScriptVariablesStayOwn(t *testing.T) {
	b := newToolBed(t, map[string]string{"ok.sh": "exit 0\n"})
	names := []string{"D", "W", "O", "c", "rc", "s", "p", "n", "src", "r", "pr"}
	s := withTools(Spec{Name: "ctr", Command: append([]string{"printenv"}, names...), Workdir: b.W},
		[]manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{script("ok.sh")}, Post: []manifest.ToolScript{script("ok.sh")}}})
	var env, want []string
	for _, n := range names {
		env = append(env, n+"=mine-"+n)
		want = append(want, "mine-"+n)
	}
	out, code, _ := b.run(t, s, env...)
	if code != 0 || strings.TrimSpace(out) != strings.Join(want, "\n") {
		t.Errorf("exit %d\n%s", code, out)
	}
	s = withTools(Spec{Name: "ctr", Command: []string{"env"}, Workdir: b.W}, []manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{script("ok.sh")}}})
	if out, code, _ = b.run(t, s, "_bctl_O=outside"); code != 0 || strings.Contains(out, "_bctl_") {
		t.Errorf("the script's variables reach the benchmark: exit %d\n%s", code, out)
	}
}

// Each way a step fails is named as itself: a script that could not be copied, one that is
// a folder (bash exits 126), one that exits 124 on its own, one that timed out.
func TestToolStepFailuresNamed(t *testing.T) {
	b := newToolBed(t, map[string]string{"e124.sh": "exit 124\n", "dir/x": "", "slow.sh": "sleep 30\n"})
	for _, tc := range []struct {
		path, want string
		timeout    int
	}{
		{"missing.sh", "tool p: pre_scripts missing.sh could not be copied to ", 600},
		{"dir", "tool p: pre_scripts dir exited 126, so the benchmark did not run", 600},
		{"e124.sh", "tool p: pre_scripts e124.sh exited 124, so the benchmark did not run", 600},
		{"slow.sh", "tool p: pre_scripts slow.sh timed out after 1s, so the benchmark did not run", 1},
	} {
		s := withToolsTimeout(Spec{Name: "ctr", Command: []string{"echo", "bench-ran"}, Workdir: b.W},
			[]manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{script(tc.path)}}}, tc.timeout)
		out, code, w := b.run(t, s)
		if f, cmd := w.failed(); code == 0 || cmd || !strings.HasPrefix(f, tc.want) || strings.Contains(out, "bench-ran") {
			t.Errorf("%s: exit %d, watch %q %v\n%s", tc.path, code, f, cmd, out)
		}
	}
}

// Post scripts run after the benchmark failed, and after its timeout's SIGTERM (which
// reaches the benchmark); the benchmark's failure is its own.
func TestToolPostScriptsAfterFailureAndTimeout(t *testing.T) {
	b := newToolBed(t, map[string]string{"post.sh": "echo post-ran \"$1\" > post.txt\n", "pre.sh": "touch \"$BENCHCTL_OUTPUT_DIR/started\"\n"})
	tools := []manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{script("pre.sh")}, Post: []manifest.ToolScript{script("post.sh", "a")}}}
	s := withTools(Spec{Name: "ctr", Command: []string{"bash", "-c", "exit 3"}, Workdir: b.W}, tools)
	out, code, w := b.run(t, s)
	post, _ := os.ReadFile(filepath.Join(b.O, "run_directory", "post.txt"))
	if f, cmd := w.failed(); code != 3 || !cmd || f != "" || string(post) != "post-ran a\n" {
		t.Errorf("failure: exit %d, watch %q %v, post %q\n%s", code, f, cmd, post, out)
	}

	os.RemoveAll(filepath.Join(b.O, "run_directory"))
	os.Remove(filepath.Join(b.O, "started"))
	s = withTools(Spec{Name: "ctr", Command: []string{"bash", "-c", "trap 'kill $!; echo bench-got-term; exit 143' TERM; touch \"$BENCHCTL_OUTPUT_DIR/trapped\"; sleep 60 & wait"}, Workdir: b.W}, tools)
	c := b.cmd(s)
	var buf strings.Builder
	c.Stdout, c.Stderr = &buf, &buf
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The pre script ran, and the benchmark has set its trap: it says so (a file), however
	// long a busy machine takes to get there.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(b.O, "trapped")); err == nil {
			break
		}
		if time.Now().After(deadline) { // does not hang
			c.Process.Kill()
			t.Fatalf("the benchmark never set its trap:\n%s", buf.String())
		}
	}
	c.Process.Signal(syscall.SIGTERM)
	err := c.Wait()
	post, _ = os.ReadFile(filepath.Join(b.O, "run_directory", "post.txt"))
	w = toolWatcher(s)
	w.Write([]byte(buf.String()))
	if f, cmd := w.failed(); err == nil || !cmd || f != "" || string(post) != "post-ran a\n" || !strings.Contains(buf.String(), "bench-got-term") {
		t.Errorf("timeout: %v, watch %q %v, post %q\n%s", err, f, cmd, post, buf.String())
	}
}

// A container killed before its script's end (SIGKILL after the timeout's grace, a cancel)
// leaves its tools' directory in the shared working directory; the node moves it to its
// results from the host, through the mount that holds the working directory.
func TestToolsDirMovedAfterTheContainerWasKilled(t *testing.T) {
	b := newToolBed(t, map[string]string{"pre.sh": "echo traced > trace.txt; mkdir -p sub; echo x > sub/y; ln -s /etc/passwd link; mkfifo fifo; touch \"$BENCHCTL_OUTPUT_DIR/started\"\n"})
	s := withTools(Spec{Name: "ctr", Command: []string{"sleep", "60"}, Workdir: b.W,
		Mounts: []manifest.Mount{{Source: b.W, Target: b.W}, {Source: b.O, Target: OutputDir}}},
		[]manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{script("pre.sh")}, Post: []manifest.ToolScript{script("pre.sh")}}})
	c := b.cmd(s)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) { // the pre script ran
		if _, err := os.Stat(filepath.Join(b.O, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) { // does not hang
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			t.Fatal("the pre script never started")
		}
	}
	syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // the container's end: every process at once
	c.Wait()
	left := filepath.Join(b.W, "run_directory-ctr")
	if _, err := os.Stat(filepath.Join(left, "trace.txt")); err != nil {
		t.Fatalf("the killed script should have left its directory: %v", err)
	}
	moved, err := rescueToolsDir(s, b.O)
	if err != nil || moved != left {
		t.Fatalf("%q %v", moved, err)
	}
	kept := filepath.Join(b.O, "run_directory")
	if data, err := os.ReadFile(filepath.Join(kept, "trace.txt")); err != nil || string(data) != "traced\n" {
		t.Errorf("%q %v", data, err)
	}
	if _, err := os.Lstat(left); err == nil {
		t.Error("left in the working directory")
	}

	// The results have a run_directory already (the script moved part of it): copied in,
	// links kept as links, a FIFO skipped, then removed.
	os.MkdirAll(filepath.Join(left, "sub"), 0o755)
	os.WriteFile(filepath.Join(left, "more.txt"), []byte("more"), 0o644)
	os.WriteFile(filepath.Join(left, "sub", "z"), []byte("z"), 0o644)
	os.Symlink("/etc/hostname", filepath.Join(left, "link2"))
	syscall.Mkfifo(filepath.Join(left, "fifo2"), 0o644)
	if _, err := rescueToolsDir(s, b.O); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(kept, "sub", "z")); string(data) != "z" {
		t.Errorf("not merged: %q", data)
	}
	if l, err := os.Readlink(filepath.Join(kept, "link2")); err != nil || l != "/etc/hostname" {
		t.Errorf("link: %q %v", l, err)
	}
	if _, err := os.Lstat(filepath.Join(kept, "fifo2")); err == nil {
		t.Error("a FIFO was copied")
	}
	if _, err := os.Lstat(left); err == nil {
		t.Error("left in the working directory")
	}

	// A link planted at the directory's name is not followed; nothing to do without one.
	os.Symlink(b.O, left)
	if _, err := rescueToolsDir(s, b.O); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a link: %v", err)
	}
	os.Remove(left)
	if moved, err := rescueToolsDir(s, b.O); moved != "" || err != nil {
		t.Errorf("nothing there: %q %v", moved, err)
	}
	// A working directory no mount holds (the container's own) is not looked for.
	s.Mounts = s.Mounts[1:]
	if d := toolsHostDir(s); d != "" {
		t.Errorf("%q", d)
	}
}

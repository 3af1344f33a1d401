//go:build linux

package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	shim "github.com/benchctl/benchctl/internal/procshim"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/workloadtest"
)

func newRuntime(t *testing.T) *Runtime {
	t.Helper()
	r, err := New(filepath.Join(t.TempDir(), "logs"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The process runtime passes the runtime conformance suite, on this machine's own programs.
func TestConformance(t *testing.T) {
	workloadtest.Run(t, workloadtest.Harness{Runtime: newRuntime(t), Image: ""})
}

// run starts spec and returns its exit and its output once it has ended.
func run(t *testing.T, r *Runtime, s workload.Spec) (workload.Exit, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if s.Name == "" {
		s.Name = strings.ReplaceAll(t.Name(), "/", "-")
	}
	id, err := r.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Remove(context.Background(), id) })
	exit := r.Wait(ctx, id)
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.Logs(ctx, id, &out); err != nil {
		t.Fatal(err)
	}
	return <-exit, out.String()
}

// A process gets its environment, its working folder and its limits, set before its
// program runs; the shim's own variable is gone by then, the marker is there.
func TestEnvironmentFolderAndLimits(t *testing.T) {
	dir := t.TempDir()
	e, out := run(t, newRuntime(t), workload.Spec{Command: []string{"sh", "-c", `echo "$GREETING"; pwd; ulimit -Sn; ulimit -Hn; echo "shim=${BENCHCTL_PROCESS_SHIM-unset}"; echo "marker=$BENCHCTL_PROCESS"`},
		Env: []string{"GREETING=hello", "PATH=/usr/bin:/bin"}, Workdir: dir, Labels: map[string]string{"io.benchctl.job": "7"},
		Ulimits: []manifest.Limit{{Name: "nofile", Soft: 123, Hard: 456}}})
	want := "hello\n" + dir + "\n123\n456\nshim=unset\nmarker=TestEnvironmentFolderAndLimits\n"
	if e.Code != 0 || out != want {
		t.Fatalf("exit %+v, output:\n%s\nwant:\n%s", e, out, want)
	}
}

// Without limits to set, the benchmark's program is started itself, not through the shim
// (a start of benchctl, whose init alone costs milliseconds): with this program's shim
// replaced by a program that only fails, a process without limits runs, one with limits
// does not.
func TestTheShimOnlyForLimits(t *testing.T) {
	r := newRuntime(t)
	r.self = "/bin/false"
	e, out := run(t, r, workload.Spec{Name: "nolimits", Command: []string{"sh", "-c", "echo ran"}})
	if e.Code != 0 || out != "ran\n" {
		t.Errorf("without limits: exit %+v, %q", e, out)
	}
	e, out = run(t, r, workload.Spec{Name: "limits", Command: []string{"sh", "-c", "echo ran"}, Ulimits: []manifest.Limit{{Name: "nofile", Soft: 100, Hard: 100}}})
	if e.Code == 0 || out != "" {
		t.Errorf("with limits, the shim was not asked for: exit %+v, %q", e, out)
	}
}

// A limit the process may not have fails its start, saying which: exit 127 and the reason
// in its log, not a process without its limit. No one (root neither) may have more open
// files than the kernel's nr_open.
func TestALimitThatCannotBeSet(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		t.Fatal(err)
	}
	nrOpen, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	e, out := run(t, newRuntime(t), workload.Spec{Command: []string{"true"}, Ulimits: []manifest.Limit{{Name: "nofile", Soft: nrOpen + 1, Hard: nrOpen + 1}}})
	if e.Code != 127 || !strings.Contains(out, "setting the limit nofile") {
		t.Fatalf("exit %+v, %q", e, out)
	}
}

// What has no meaning without an engine is refused, naming the field: exit 4.
func TestRefusals(t *testing.T) {
	r := newRuntime(t)
	for field, s := range map[string]workload.Spec{
		"mounts (/data:/workspace)": {Mounts: []manifest.Mount{{Source: "/data", Target: "/workspace"}}},
		"container.devices":         {Devices: []manifest.Device{{Host: "/dev/kfd"}}},
		"GPU requests":              {GPURequests: []workload.GPURequest{{Driver: "nvidia", Count: -1}}},
		"container.capAdd":          {CapAdd: []string{"SYS_PTRACE"}},
		"container.securityOpt":     {SecurityOpt: []string{"seccomp=unconfined"}},
		"container.userns":          {UserNS: "keep-id"},
		"container.user":            {User: "1000"},
		"container.groupAdd":        {GroupAdd: []string{"video"}},
		"container.network (none)":  {Network: "none"},
		"container.ipc (private)":   {IPC: "private"},
		"container.shmSize":         {ShmSize: 1 << 30},
		"container.ulimits (bogus)": {Ulimits: []manifest.Limit{{Name: "bogus", Soft: 1, Hard: 1}}},
	} {
		s.Name, s.Command = "refused", []string{"true"}
		_, err := r.Create(context.Background(), s)
		var refused *Refused
		if !errors.As(err, &refused) || !strings.HasPrefix(err.Error(), field) || exitcode.Of(err) != exitcode.Invalid {
			t.Errorf("%s: %v", field, err)
		}
	}
	// an identity mount is the node's own file: nothing to do
	if _, err := r.Create(context.Background(), workload.Spec{Name: "same", Command: []string{"true"}, Mounts: []manifest.Mount{{Source: "/tmp", Target: "/tmp/"}}}); err != nil {
		t.Errorf("an identity mount: %v", err)
	}
	if _, err := r.Create(context.Background(), workload.Spec{Name: "missing", Command: []string{"no-such-program-here"}, Env: []string{"PATH=/nowhere"}}); err == nil || !strings.Contains(err.Error(), "/nowhere") {
		t.Errorf("a program not in PATH: %v", err)
	}
	if _, err := r.Create(context.Background(), workload.Spec{Name: "../escape", Command: []string{"true"}}); err == nil {
		t.Error("a name with a slash names a file outside the logs")
	}
}

// Stop ends the whole group: a child the benchmark left running in the background is
// gone too.
func TestStopEndsTheGroup(t *testing.T) {
	r := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := r.Create(ctx, workload.Spec{Name: "group", Command: []string{"sh", "-c", "sleep 600 & echo $!; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	exit := r.Wait(ctx, id)
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	pid := firstLinePid(t, ctx, r, id)
	if err := r.Stop(ctx, id, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if e := <-exit; e.Code != 128+15 {
		t.Errorf("the group's leader ended %+v, want SIGTERM's 143", e)
	}
	waitGone(t, ctx, pid)
	_ = r.Remove(ctx, id)
}

// A benchctl that crashed left a process: another one (cleanup) finds it by its marker and
// labels, never by its name, and ends its group.
func TestListAndRemoveWhatAnotherRunLeft(t *testing.T) {
	left, cleaner := newRuntime(t), newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	labels := map[string]string{"io.benchctl.job": "left-" + strconv.Itoa(os.Getpid()), "io.benchctl.rank": "0"}
	id, err := left.Create(ctx, workload.Spec{Name: "benchctl-left-0", Command: []string{"sh", "-c", "sleep 600 & echo $!; wait"}, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	exit := left.Wait(ctx, id)
	if err := left.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	child := firstLinePid(t, ctx, left, id)
	ps, err := cleaner.List(ctx, map[string]string{"io.benchctl.job": labels["io.benchctl.job"]})
	if err != nil || len(ps) != 1 || ps[0].ID != "benchctl-left-0" || ps[0].Labels["io.benchctl.rank"] != "0" {
		t.Fatalf("another runtime lists %+v, %v", ps, err)
	}
	if ps, _ := cleaner.List(ctx, map[string]string{"io.benchctl.job": "another"}); len(ps) != 0 {
		t.Fatalf("another job's filter found %+v", ps)
	}
	if err := cleaner.Remove(ctx, ps[0].ID); err != nil {
		t.Fatal(err)
	}
	if e := <-exit; e.Code != 128+9 {
		t.Errorf("the left process ended %+v, want SIGKILL's 137", e)
	}
	waitGone(t, ctx, child)
}

// Exec runs beside the process, in its folder and environment, and is killed with its
// context; a process that has ended takes no exec.
func TestExecBesideAProcess(t *testing.T) {
	r := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	id, _ := r.Create(ctx, workload.Spec{Name: "beside", Command: []string{"sleep", "600"}, Workdir: dir, Env: []string{"FROM_SPEC=1", "PATH=/usr/bin:/bin"}})
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	defer r.Remove(ctx, id)
	var out bytes.Buffer
	code, err := r.Exec(ctx, id, workload.Command{Argv: []string{"sh", "-c", `pwd; echo "$FROM_SPEC$FROM_EXEC"; exit 4`}, Env: []string{"FROM_EXEC=2"}, Stdout: &out})
	if err != nil || code != 4 || out.String() != dir+"\n12\n" {
		t.Fatalf("exec: %d %v %q", code, err, out.String())
	}
}

// firstLine cancels its follow once a whole first line was written to it.
type firstLine struct {
	b      bytes.Buffer
	cancel context.CancelFunc
}

func (f *firstLine) Write(p []byte) (int, error) {
	f.b.Write(p)
	if bytes.IndexByte(f.b.Bytes(), '\n') >= 0 {
		f.cancel()
	}
	return len(p), nil
}

// firstLinePid is the pid the process printed first, read by following its output.
func firstLinePid(t *testing.T, ctx context.Context, r *Runtime, id string) int {
	t.Helper()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &firstLine{cancel: cancel}
	_ = r.Logs(lctx, id, w)
	line, _, ok := strings.Cut(w.b.String(), "\n")
	pid, err := strconv.Atoi(line)
	if !ok || err != nil {
		t.Fatalf("no pid first: %q", w.b.String())
	}
	return pid
}

// waitGone waits until pid has exited (its pidfd says so: a zombie waiting for its reaper
// counts), or fails when ctx ends first.
func waitGone(t *testing.T, ctx context.Context, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	deadline, _ := ctx.Deadline()
	ms := int(time.Until(deadline).Milliseconds())
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			t.Fatalf("process %d outlived its group's end (%v)", pid, err)
		}
		return
	}
}

// A garbled request to the shim is refused with exit 127 and a reason, never run.
func TestShimRefusesAGarbledRequest(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), shim.Env+"={not json")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(string(out), "garbled "+shim.Env) {
		t.Fatalf("%v: %s", err, out)
	}
}

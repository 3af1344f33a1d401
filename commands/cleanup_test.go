package commands

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/proctable"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/process"
)

// cleanup --runtime process ends process groups, so an --engine beside it is refused (exit 4)
// before anything is looked for; a job with nothing left on this node says so.
func TestCleanupRuntimeProcess(t *testing.T) {
	var out bytes.Buffer
	io := iostreams.New(nil, &out, &bytes.Buffer{})
	err := Cleanup(context.Background(), io, &CleanupOptions{Job: "42", SharedDir: t.TempDir(), Host: "n1", Outcome: "lost", Runtime: "process", Engine: "docker"})
	if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "--engine docker with --runtime process") {
		t.Fatalf("--engine with --runtime process: %v", err)
	}
	err = Cleanup(context.Background(), io, &CleanupOptions{Job: "cleanup-test-nothing", SharedDir: t.TempDir(), Host: "n1", Outcome: "lost", Runtime: "process"})
	if err != nil || !strings.Contains(out.String(), "nothing to clean up for job cleanup-test-nothing on n1") {
		t.Fatalf("%v: %q", err, out.String())
	}
}

// A run that crashed left a benchmark's process group (a process and its child) on the node:
// cleanup --runtime process finds it by the job's marker and ends the whole group, and
// leaves alone a process of another job.
func TestCleanupEndsWhatACrashedRunLeft(t *testing.T) {
	left, err := process.New(t.TempDir()) // the crashed run's runtime
	if err != nil {
		t.Fatal(err)
	}
	start := func(job string) int {
		labels := map[string]string{runner.LabelJob: job, runner.LabelAttempt: "0", runner.LabelRank: "0", runner.LabelBenchmark: "b"}
		id, err := left.Create(context.Background(), workload.Spec{Name: "benchctl-" + job + "-0-r0-b", Command: []string{"sh", "-c", "sleep 300 & wait"},
			Env: []string{"PATH=" + os.Getenv("PATH")}, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		if err := left.Start(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = left.Remove(context.Background(), id) })
		p, _ := left.Inspect(context.Background(), id)
		return p.Pid
	}
	job := fmt.Sprintf("cleanup-crash-%d", os.Getpid())
	pid, other := start(job), start(job+"-other")
	var out bytes.Buffer
	io := iostreams.New(nil, &out, &bytes.Buffer{})
	if err := Cleanup(context.Background(), io, &CleanupOptions{Job: job, SharedDir: t.TempDir(), Host: "n1", Outcome: "lost", Runtime: "process"}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "benchctl-"+job+"-0-r0-b") || !strings.Contains(out.String(), "removed") {
		t.Errorf("cleanup did not say what it ended:\n%s", out.String())
	}
	for pid := range groupOf(pid, 10*time.Second) {
		t.Errorf("process %d of the crashed run's group is left", pid)
	}
	if len(groupOf(other, 0)) == 0 {
		t.Error("the other job's process was ended too")
	}
}

// groupOf is the live (not zombie) members of process group pgid that are not gone within
// wait (a bound on a hang, waited for on their pidfds).
func groupOf(pgid int, wait time.Duration) map[int]bool {
	out := map[int]bool{}
	pids, _ := proctable.Pids()
	for _, p := range pids {
		if _, pg, state, ok := proctable.Stat(p); ok && pg == pgid && state != 'Z' {
			if fd, err := unix.PidfdOpen(p, 0); err == nil {
				n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(wait.Milliseconds()))
				unix.Close(fd)
				if n > 0 {
					continue
				}
			}
			out[p] = true
		}
	}
	return out
}

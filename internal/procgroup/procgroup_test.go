//go:build unix

package procgroup

import (
	"bufio"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child that started a child of its own and is killed at its context's end takes that
// child with it: the grandchild is gone too (without the group it lived on for 60 s). The
// context ends once the grandchild runs (the child has said its pid).
func TestOwnKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 60 & echo $!; wait")
	Own(cmd)
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child ended by itself")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no grandchild pid: %q", line)
	}
	deadline := time.Now().Add(time.Minute) // does not hang: the group was killed, the grandchild goes once reaped
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the grandchild %d outlived its killed parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Own before the start of a command that never starts does not panic on cancel.
func TestOwnWithoutAProcess(t *testing.T) {
	cmd := exec.Command("/nonexistent/program")
	Own(cmd)
	if err := cmd.Cancel(); err != nil {
		t.Errorf("cancel before start: %v", err)
	}
}

//go:build unix

package procgroup

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child that started a child of its own and is killed at its context's end takes that
// child with it: the grandchild is gone too (without the group it lived on for 60 s).
func TestOwnKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 60 & echo $!; wait")
	Own(cmd)
	cmd.WaitDelay = time.Second
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Run(); err == nil {
		t.Fatal("the child ended by itself")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("no grandchild pid: %q", out.String())
	}
	deadline := time.Now().Add(5 * time.Second) // does not hang: the group was killed
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

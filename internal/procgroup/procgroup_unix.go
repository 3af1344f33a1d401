//go:build unix

package procgroup

import (
	"os/exec"
	"syscall"
)

// Own makes cmd the leader of a process group of its own and has exec.CommandContext's
// cancellation kill that group with SIGKILL. Call it before cmd starts.
func Own(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// The group's id is the leader's pid; the leader is gone already when only its
		// children are left, and they are killed all the same.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

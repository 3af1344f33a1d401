//go:build !unix

package procgroup

import "os/exec"

// Own leaves cmd as it is where there are no process groups: cancellation kills the child.
func Own(cmd *exec.Cmd) {}

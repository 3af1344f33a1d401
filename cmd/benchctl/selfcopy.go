package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/runner/remote"
)

// newSelfCopyCmd is the hidden command of the init container of a Kubernetes job's pods:
// it copies this benchctl and its agent into DIR (an emptyDir the benchmark's container
// mounts), so that the benchctl image needs nothing else (no shell, no cp).
func newSelfCopyCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "self-copy DIR",
		Short:  "Copy this benchctl and its agent into DIR (a Kubernetes pod's init container)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			agent, err := remote.AgentBinary()
			if err != nil {
				return err
			}
			for _, c := range []struct{ from, to string }{{self, "benchctl"}, {agent, remote.AgentName}} {
				in, err := os.Open(c.from)
				if err != nil {
					return err
				}
				err = safefile.CopyNew(in, filepath.Join(args[0], c.to), 0o755, 1<<30)
				in.Close()
				if err != nil {
					return fmt.Errorf("copying %s into %s: %w", c.from, args[0], err)
				}
			}
			return nil
		},
	}
}

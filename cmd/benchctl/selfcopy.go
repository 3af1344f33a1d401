package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// newSelfCopyCmd is the hidden command of a Kubernetes job's init container
// (commands.SelfCopy).
func newSelfCopyCmd(io iostreams.Streams) *cobra.Command {
	return &cobra.Command{
		Use:    "self-copy DIR",
		Short:  "Copy this benchctl and its agent into DIR (a Kubernetes pod's init container)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return commands.SelfCopy(cmd.Context(), io, &args[0])
		},
	}
}

// newJobArchiveCmd is the hidden command a collector pod runs (commands.JobArchive).
func newJobArchiveCmd(io iostreams.Streams) *cobra.Command {
	opts := &commands.JobArchiveOptions{}
	cmd := &cobra.Command{
		Use:    "job-archive JOB --shared-dir DIR",
		Short:  "Write a job's folders to stdout as a tar stream (the collector pod's command)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Job = args[0]
			return commands.JobArchive(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.SharedDir, "shared-dir", "", "the shared directory that holds the job")
	return cmd
}

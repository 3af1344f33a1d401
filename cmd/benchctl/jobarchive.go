package main

import (
	"bufio"
	"errors"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/archive"
)

// newJobArchiveCmd is the hidden command a collector pod runs: it writes a job's folders
// (every attempt's) to stdout as a tar stream, for `benchctl collect` on a machine that
// reaches the cluster's API but not its results volume.
func newJobArchiveCmd(io iostreams.Streams) *cobra.Command {
	var shared string
	cmd := &cobra.Command{
		Use:    "job-archive JOB --shared-dir DIR",
		Short:  "Write a job's folders to stdout as a tar stream (the collector pod's command)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := commands.SharedDir(shared)
			if err != nil {
				return err
			}
			w := bufio.NewWriterSize(io.Out(), 1<<20)
			files, skipped, err := archive.Write(w, jobdir.Layout{Shared: dir}, args[0])
			if errors.Is(err, archive.ErrNoJob) {
				return usagef("give a job of that shared directory (benchctl jobs lists them)", "%v", err)
			}
			if err != nil {
				return err
			}
			if skipped > 0 {
				slog.Warn("not links, FIFOs or devices: left out", "count", skipped)
			}
			slog.Debug("archived", "job", args[0], "files", files)
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&shared, "shared-dir", "", "the shared directory that holds the job")
	return cmd
}

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/runner/cleanup"
	"github.com/benchctl/benchctl/workload/engine"
)

type cleanupOptions struct {
	job       string
	sharedDir string
	host      string
	outcome   string
	output    string
	engine    string
}

func newCleanupCmd(io streams) *cobra.Command {
	opts := &cleanupOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup --job ID",
		Short: "Remove a job's containers from this node and record nodes that ended without saying so",
		Long: `Remove every container of a job (label io.benchctl.job, any attempt) from this node's Docker
Engine, and write an end into this host's status.json files of the job that still say
running: outcome lost (benchctl was killed or the node crashed), or cancelled. Meant for a
Slurm epilog (it runs as root on every node of the job when it ends; SLURM_JOB_ID and
SLURMD_NODENAME are set there), or by hand after a node lost its benchctl. Every Engine call
is bounded (5 s). Exit 1 if a container could not be removed or a status not recorded.`,
		Example: `  benchctl cleanup --job 1234 --shared-dir /shared/benchctl
  # slurm.conf: Epilog=/etc/slurm/epilog.d/benchctl.sh, which runs:
  BENCHCTL_SHARED_DIR=/shared/benchctl benchctl cleanup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.job == "" {
				opts.job = os.Getenv("SLURM_JOB_ID")
			}
			if opts.job == "" {
				return usagef("give the job: benchctl cleanup --job 1234 (in a Slurm epilog, SLURM_JOB_ID is used)", "--job is required")
			}
			return cleanupRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.job, "job", "", "the job id (default $SLURM_JOB_ID)")
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	engineFlag(cmd, &opts.engine)
	f.StringVar(&opts.host, "host", "", "this node's name in the job's node folders (default $SLURMD_NODENAME, else the host name)")
	choiceFlag(cmd, f, &opts.outcome, "outcome", "", jobdir.OutcomeLost, "what to record for a node still saying running: lost or cancelled", jobdir.OutcomeLost, runner.OutcomeCancelled)
	outputFlag(cmd, &opts.output, "table", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

func cleanupRun(ctx context.Context, io streams, opts *cleanupOptions) error {
	if err := runner.ValidJobID(opts.job); err != nil {
		return usagef("give the id of a job (as SLURM_JOB_ID or BENCHCTL_JOB_ID had it)", "--job: %v", err)
	}
	host := opts.host
	if host == "" {
		host = os.Getenv("SLURMD_NODENAME")
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	eng, err := image.ConnectChecked(ctx, opts.engine)
	if err != nil {
		return err
	}
	defer eng.Close()
	res, err := cleanup.Cleanup(ctx, cleanup.CleanupOptions{Job: opts.job, SharedDir: dir, Host: host, Outcome: opts.outcome, Engine: engine.New(eng)})
	if res != nil {
		if opts.output == "json" {
			if jerr := writeJSON(io.out, res); jerr != nil {
				return jerr
			}
		} else {
			for _, c := range res.Removed {
				state := "removed"
				if c.Error != "" {
					state = "not removed: " + c.Error
				}
				fmt.Fprintf(io.out, "container\t%s\tattempt %d rank %d %s\t%s\n", c.Name, c.Attempt, c.Rank, c.Benchmark, state)
			}
			for _, p := range res.Marked {
				fmt.Fprintf(io.out, "status\t%s\t%s\n", p, opts.outcome)
			}
			for _, why := range res.Skipped {
				fmt.Fprintf(io.out, "skipped\t%s\n", why)
			}
			if len(res.Removed) == 0 && len(res.Marked) == 0 && len(res.Skipped) == 0 {
				fmt.Fprintf(io.out, "nothing to clean up for job %s on %s\n", opts.job, host)
			}
		}
	}
	if err != nil {
		return &cleanupFailed{err}
	}
	return nil
}

// cleanupFailed is a cleanup that left something behind: exit 1.
type cleanupFailed struct{ err error }

func (e *cleanupFailed) Error() string { return "cleanup incomplete: " + e.err.Error() }
func (e *cleanupFailed) Unwrap() error { return e.err }
func (e *cleanupFailed) ExitCode() int { return 1 }

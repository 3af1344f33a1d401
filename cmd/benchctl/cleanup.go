package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
)

func newCleanupCmd(io iostreams.Streams, run runF[*commands.CleanupOptions]) *cobra.Command {
	run = run.or(commands.Cleanup)
	opts := &commands.CleanupOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup --job ID",
		Short: "Remove a job's containers from this node and record nodes that ended without saying so",
		Long: `Remove every container of a job (label io.benchctl.job, any attempt) from this node's Docker
Engine, and write an end into this host's status.json files of the job that still say
running: outcome lost (benchctl was killed or the node crashed), or cancelled. Meant for a
Slurm epilog (it runs as root on every node of the job when it ends; SLURM_JOB_ID and
SLURMD_NODENAME are set there), or by hand after a node lost its benchctl. Every Engine call
is bounded (5 s). A Podman service a run of the job started itself (engine: podman with no
service answering) and left behind is ended too, found by its marker; with --engine podman and
no service answering, cleanup starts one of its own for its work. Exit 1 if a container could
not be removed or a status not recorded.`,
		Example: `  benchctl cleanup --job 1234 --shared-dir /shared/benchctl
  # slurm.conf: Epilog=/etc/slurm/epilog.d/benchctl.sh, which runs:
  BENCHCTL_SHARED_DIR=/shared/benchctl benchctl cleanup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if job, host, ok := commands.EpilogNode(os.LookupEnv); ok {
				opts.EpilogJob, opts.EpilogHost = job, host
			}
			if opts.Job == "" && opts.EpilogJob == "" {
				return usagef("give the job: benchctl cleanup --job 1234 (in a Slurm epilog, SLURM_JOB_ID is used)", "--job is required")
			}
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Job, "job", "", "the job id (default $SLURM_JOB_ID)")
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	engineFlag(cmd, &opts.Engine)
	runtimeFlag(cmd, &opts.Runtime)
	f.StringVar(&opts.Host, "host", "", "this node's name in the job's node folders (default $SLURMD_NODENAME, else the host name)")
	choiceFlag(cmd, f, &opts.Outcome, "outcome", "", jobdir.OutcomeLost, "what to record for a node still saying running: lost or cancelled", jobdir.OutcomeLost, runner.OutcomeCancelled)
	outputFlag(cmd, &opts.Output, "table", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

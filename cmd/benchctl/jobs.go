package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

func newJobsCmd(io iostreams.Streams, run runF[*commands.JobsOptions]) *cobra.Command {
	run = run.or(commands.Jobs)
	opts := &commands.JobsOptions{}
	cmd := &cobra.Command{
		Use:   "jobs [--shared-dir D] [--limit N] [-o FORMAT]",
		Short: "List the jobs in the shared directory, newest first, with their state",
		Long: `List the jobs of the shared directory (jobs/<id>, the newest attempt of a requeued job),
newest first: state, nodes, start, duration and outcome, judged from job.json and the nodes'
status files, and from Slurm (squeue, scontrol, sacct) for a job whose nodes have not all
finished, when Slurm is there.

States: running (a node is at work), done (every node succeeded), failed (a node failed, or
never reported, in a job that has ended), lost (a node still says running but Slurm says the
job ended: it was killed or its node died), pending (no node has reported yet). COLLECTED
says whether benchctl collect has written the job's perf.csv.`,
		Example: `  benchctl jobs
  benchctl jobs --shared-dir /shared/benchctl --limit 50
  benchctl jobs -o json | jq -r '.[] | select(.state == "failed") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Limit < 0 {
				return usagef("give the number of jobs to list, or 0 for all", "invalid --limit %d", opts.Limit)
			}
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	f.IntVar(&opts.Limit, "limit", 20, "list at most this many jobs, the newest (0: all)")
	f.BoolVar(&opts.NoSlurm, "no-slurm", false, "do not ask the scheduler (Slurm): judge unfinished jobs by their files alone")
	clusterFlags(cmd, &opts.Cluster)
	outputFlag(cmd, &opts.Output, "table", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

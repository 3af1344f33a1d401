package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

func newCancelCmd(io iostreams.Streams, run runF[*commands.CancelOptions]) *cobra.Command {
	run = run.or(commands.Cancel)
	opts := &commands.CancelOptions{}
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "End a job benchctl submitted (Slurm: scancel; Kubernetes: delete its Job)",
		Long: `End a job: a Slurm job id is cancelled with scancel (its tasks get SIGTERM, then SIGKILL
after Slurm's KillWait); a Kubernetes job id (k8s-...) has its Job deleted, with its pods
(SIGTERM, then SIGKILL after their grace period), its Secret, ConfigMap and Role. Each
node's benchctl run ends its benchmark as it does on any SIGTERM and leaves its status,
logs and diagnostics in the job folder; benchctl jobs then says how the job ended.

A job that has already ended is no error; an id no scheduler has is (exit 4).`,
		Example: `  benchctl cancel 4242
  benchctl cancel k8s-20261128-204435-a1b2 --namespace bench`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Job = args[0]
			return run(cmd.Context(), io, opts)
		},
	}
	clusterFlags(cmd, &opts.Cluster)
	return cmd
}

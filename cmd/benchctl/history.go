package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/results/collect"
	"github.com/benchctl/benchctl/results/compare"
)

func newHistoryCmd(io iostreams.Streams, run runF[*commands.HistoryOptions]) *cobra.Command {
	run = run.or(commands.History)
	opts := &commands.HistoryOptions{}
	cmd := &cobra.Command{
		Use:   "history [JOB] [--name MANIFEST] [--benchmark B] [--metric M] [--variant V] [-n N] [-o FORMAT]",
		Short: "List the results of past jobs, for trends and dashboards",
		Long: `List the rows of the collected jobs of the shared directory, oldest first: when the job
started, its id, the row's model, metric, key columns and variant, its performance (the median
over trials in an experiment) with the interval and trials, the nodes, the git commit and image,
and the verdict against the manifest's reference job (benchctl reference set; the threshold rule
on the two values, with the manifest's metrics: rules). A JOB argument selects the jobs of its
manifest; --name (a manifest's name), --benchmark (the model column), --metric and --variant
filter; -n keeps
the newest N jobs.

-o csv and json are for pandas and the like, markdown for a CI summary, and openmetrics the
Prometheus text format: the newest value of every row key (benchctl_performance, with the
job's start time, trials and regression as series of their own), for a node exporter's
textfile folder or a push gateway, so Grafana draws trends with nothing else to run.

The job folders are the truth: what history keeps for speed (jobs/.history/index.json) is
checked against them on every call and rebuilt where stale; several login nodes may write it
at once.`,
		Example: `  benchctl history --name allreduce -n 20
  benchctl history 123456 --metric tokens_per_second -o csv > trend.csv
  benchctl history -o openmetrics > /var/lib/node_exporter/textfile/benchctl.prom`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			thr, err := compare.ParseThreshold(opts.Threshold)
			if err != nil {
				return usagef("give a percentage, e.g. --threshold 5%", "invalid --threshold: %v", err)
			}
			if opts.Opts.Last < 0 {
				return usagef("give how many jobs, or 0 for all", "invalid -n %d", opts.Opts.Last)
			}
			opts.Opts.Threshold = thr
			if len(args) == 1 {
				opts.Job = args[0]
			}
			return run(cmd.Context(), io, opts)
		},
		ValidArgsFunction: completeJobIDs(&opts.SharedDir),
	}
	f := cmd.Flags()
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	_ = cmd.MarkFlagDirname("shared-dir")
	f.StringVar(&opts.Opts.Manifest, "name", "", "only the jobs of the manifest of this name")
	f.StringVar(&opts.Opts.Benchmark, "benchmark", "", "only the rows of this model (perf.csv's model column)")
	f.StringVar(&opts.Opts.Metric, "metric", "", "only the rows of this metric")
	f.StringVar(&opts.Opts.Variant, "variant", "", "only the rows of this experiment variant (e.g. batch=32,nodes=2)")
	f.IntVarP(&opts.Opts.Last, "last", "n", 0, "only the newest N jobs (0: all)")
	f.StringVar(&opts.Threshold, "threshold", "5%", "the tolerated change of the verdict against the reference, for a metric whose rule gives none")
	outputFlag(cmd, &opts.Output, collect.FormatsOf(collect.KindHistory)...)
	return cmd
}

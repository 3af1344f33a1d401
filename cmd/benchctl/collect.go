package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/collect"
	"github.com/benchctl/benchctl/results/compare"
)

func newCollectCmd(io iostreams.Streams, run runF[*commands.CollectOptions]) *cobra.Command {
	run = run.or(commands.Collect)
	opts := &commands.CollectOptions{}
	cmd := &cobra.Command{
		Use:               "collect (JOBID | --latest) [--shared-dir D] [--attempt N] [--partial] [--append FILE] [-o FORMAT]",
		ValidArgsFunction: completeJobIDs(&opts.SharedDir),
		Short:             "Aggregate a job's per-node results into perf.csv, summary.json and report.html",
		Long: `Read every node folder of a job (jobs/<jobid> in the shared directory, the newest attempt
of a requeued job unless --attempt says which) and write perf.csv (madengine's columns, then
benchctl's: winner, min, max, mean, median, stdev, cv, failed nodes), summary.json and a
self-contained report.html into the job folder, each atomically. The table is printed on
stdout.

Per benchmark the best CSV wins: the node with the most rows that have a performance value
(then the most rows, then the lowest rank). Values that several nodes report for the same
row are aggregated, never summed. A benchmark is SUCCESS only when it has a result, no
node failed and every node finished; a node that never reported counts as failed, and a
node whose status still says running in a job that Slurm says has ended was lost
("lost (last status T, what it recorded last)").

A job that is still running is refused unless --partial: Slurm is asked (squeue, then
scontrol, then sacct for a job that slurmctld has forgotten) when it is there, else the
status files decide; collect says so when Slurm accounting is off. When Slurm does not
answer (a login node cut off from slurmctld), one warning says so and the job folder decides;
--no-slurm asks nothing. With --partial, nodes
still running are shown as running, never as SUCCESS: a benchmark they still run, and the
job, are FAILURE ("partial: 1 of 4 nodes still running"). --append adds the rows to your own
perf.csv under a lock (header union, atomic rewrite). --baseline compares with an earlier
perf.csv: relative_change is the change of each row's performance against the row with the
same model, metric and key columns there, in percent.

--check then judges the job against --against (its manifest's reference job, the default; last
or best, the last or best earlier collected job of the same manifest; or a job id) as compare
does (per-metric rules of the manifest, the rank test over trials) and exits 3 when a row
regressed; with no reference it warns that nothing was checked. --junit FILE writes JUnit XML
(one test case per perf.csv row: a benchmark, variant and metric; a failed or regressed row
fails with the verdict and the numbers) for CI test reporters; see docs/ci.md.

Exit codes: 0 all benchmarks succeeded (and, with --check, nothing regressed), 1 the job is
still running (without --partial) or the folders could not be read, 3 a benchmark or node
failed (with --partial: or nodes are still running), or --check found a regression, 4 no such
job or bad flags.

-o prints the table (the default), csv (perf.csv itself), json (summary.json) or markdown.
The old spellings --format FORMAT and -o FILE (for --append FILE) still work, with a
warning, until the next release.`,
		Example: `  benchctl collect 123456
  benchctl collect --latest
  benchctl collect 123456 --attempt 0 -o markdown
  benchctl collect 123456 --partial --append ~/perf.csv
  benchctl collect 123457 --baseline ~/perf-last-week.csv
  benchctl collect 123458 --check --junit results.xml          # a CI gate against the reference
  BENCHCTL_SHARED_DIR=/shared/benchctl benchctl collect 123456 -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Latest && len(args) == 1:
				return usagef("give the job id, or --latest for the newest job, not both", "--latest and the job %s are both given", args[0])
			case !opts.Latest && len(args) == 0:
				return usagef("benchctl collect JOBID (benchctl jobs lists them), or benchctl collect --latest", "no job given")
			}
			if opts.OldAppend != "" {
				if opts.AppendTo != "" && opts.AppendTo != opts.OldAppend {
					return usagef("give the file once: --append FILE", "--append %s and -o %s both name a file to append to", opts.AppendTo, opts.OldAppend)
				}
				opts.AppendTo = opts.OldAppend
			}
			thr, err := compare.ParseThreshold(opts.Threshold)
			if err != nil {
				return usagef("give a percentage, e.g. --threshold 5%", "invalid --threshold: %v", err)
			}
			opts.ThresholdPct = thr
			if len(args) == 1 {
				opts.Job = args[0]
			} else {
				var err error
				if opts.Job, err = commands.LatestJob(opts.SharedDir); err != nil {
					return err
				}
			}
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	opts.Attempt = -1
	f.Var(newestInt{flag: "--attempt", p: &opts.Attempt}, "attempt", "attempt to collect: 0 is the first run, n the n-th requeue")
	f.BoolVar(&opts.Partial, "partial", false, "collect a job that is still running; running nodes are shown as running, never as SUCCESS")
	f.StringVar(&opts.AppendTo, "append", "", "also append the rows to this perf.csv (locked, header union, atomic)")
	f.BoolVar(&opts.Check, "check", false, "judge the job against --against and exit 3 when a row regressed")
	f.StringVar(&opts.Against, "against", compare.AgainstReference, "with --check: reference, last, best or a job id")
	f.StringVar(&opts.Junit, "junit", "", "write JUnit XML of the rows (and of --check's verdicts) to this file")
	f.StringVar(&opts.Threshold, "threshold", "5%", "with --check: the tolerated change of a metric whose rule gives none")
	out := outputFlag(cmd, &opts.Output, collect.FormatsOf(collect.KindCollect)...)
	out.other = func(v string) (string, bool) {
		// The old -o FILE: a value that is no format and looks like a file (perf.csv, ./csv).
		if !strings.ContainsAny(v, "./") {
			return "", false
		}
		opts.OldAppend = v
		return deprecation("-o "+v+" (a file to append to)", "--append "+v), true
	}
	out.hint = "--append FILE appends the rows to a perf.csv"
	choiceFlag(cmd, f, &opts.Output, "format", "", "table", "old spelling of -o", collect.FormatsOf(collect.KindCollect)...)
	deprecate(cmd, "format", func(v string) string { return "-o " + v })
	f.BoolVar(&opts.Latest, "latest", false, "collect the newest job of the shared directory (benchctl jobs lists them)")
	f.StringVar(&opts.Baseline, "baseline", "", "an earlier perf.csv: fill relative_change with the change against it, in percent")
	f.BoolVar(&opts.NoSlurm, "no-slurm", false, "do not ask Slurm: judge the job by its files alone (as jobs --no-slurm)")
	clusterFlags(cmd, &opts.Cluster)
	_ = cmd.MarkFlagFilename("append", "csv")
	_ = cmd.MarkFlagFilename("baseline", "csv")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

// completeJobIDs completes job ids from the shared directory's jobs/ folder, newest first.
func completeJobIDs(flag *string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dir, err := commands.SharedDir(*flag)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		jobs, _ := jobdir.Layout{Shared: dir}.List()
		out := make([]string, len(jobs))
		for i, j := range jobs {
			out[i] = j.ID
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

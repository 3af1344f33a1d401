package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/collect"
	"github.com/benchctl/benchctl/results/compare"
)

func newCompareCmd(io iostreams.Streams, run runF[*commands.CompareOptions]) *cobra.Command {
	run = run.or(commands.Compare)
	opts := &commands.CompareOptions{}
	cmd := &cobra.Command{
		Use:   "compare [BASE] NEW [--against reference|last|best|JOB] [--threshold 5%]",
		Short: "Compare two jobs (or perf.csv files) and fail on regressions",
		Long: `Compare two results, each a job id (its newest attempt in the shared directory, collected),
a job folder, or a perf.csv file (or a benchmark's result CSV). With one job, it is compared
against --against: its manifest's reference job (the default; benchctl reference set), the last
earlier collected job of the same manifest, the best one (the best geometric mean over the rows
both have), or a job id. Rows are joined on model, metric
and the key columns both sides have (batch_size, seq_len, message_size, precision, args, an
experiment's benchctl_variant, ...: the columns that tell a sweep's rows apart; rows that
differ in none of them are matched by position). When no row joins at all, compare says on
what it tried and what each side has, and exits 4: a comparison of nothing is not a pass.

How each metric is judged comes from the metrics: rules of NEW's manifest (job.json), else
of BASE's: which way is better and the tolerated change (first matching rule; a rule without a
tolerance takes --threshold). A metric no rule names is judged with --metric-direction: auto
(the default) guesses from its name (times and latencies lower, the rest higher) and says it
guessed.

When both sides have several measured trials of a row (jobs with an experiment), the verdict
weighs their noise: a Mann-Whitney rank test (exact for small samples) says whether the change
is real at the level --alpha, and the Hodges-Lehmann interval of the shift says how large it
may be. regressed or improved: significant and the whole interval beyond the tolerance; no
change: the whole interval within it; inconclusive: the interval straddles the tolerance (the
note says about how many more trials a side would settle it). With one value a side the row is
judged single-trial: worse than the tolerance is regressed. A row with a number in BASE and
none in NEW, or whose status went from SUCCESS to anything else, is regressed. The change is
shown with the digits it takes to fall on the same side of the tolerance as its verdict. Rows
found in only one side are listed, not errors. When a file holds rows of several jobs (a
perf.csv that collect --append appended to; the benchctl_job column), the rows of the last
job that has them count.

--references FILE reads a references file (docs/ci.md): its metrics: rules come first, and
its expected values per model and metric (with lower and upper bounds in percent, ReFrame-style)
judge NEW's rows too: out of bounds on the worse side is regressed. With one side and
--references (no --against), NEW is judged against the expected values alone.

-o prints the table (the default), csv, json or markdown; --format, its old spelling, still
works with a warning until the next release.

Exit codes: 0 no regression, 3 a row regressed, 4 a side cannot be read, nothing joined, or
bad flags.`,
		Example: `  benchctl compare 123456                             # against its manifest's reference
  benchctl compare 123456 --against last
  benchctl compare jobs/123456/perf.csv --references refs.yaml
  benchctl compare 123455 123456                      # two collected jobs
  benchctl compare baseline/perf.csv jobs/123456/perf.csv
  benchctl compare base.csv new.csv --threshold 2.5% -o markdown
  benchctl compare base.csv new.csv --metric-direction lower   # latencies`,
		Args: func(cmd *cobra.Command, args []string) error {
			if n := len(args); n < 1 || n > 2 {
				got := "none"
				if n > 2 {
					got = strconv.Itoa(n) + " arguments"
				}
				return usagef("benchctl compare OLD.csv NEW.csv (two perf.csv files, job folders or job ids), or benchctl compare JOBID (one job, against --against: its manifest's reference by default)",
					"compare needs two sides to compare, or one job; got %s", got)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			thr, err := compare.ParseThreshold(opts.Threshold)
			if err != nil {
				return usagef("give a percentage, e.g. --threshold 5%", "invalid --threshold: %v", err)
			}
			alpha, err := strconv.ParseFloat(strings.TrimSpace(opts.Alpha), 64)
			if err != nil || alpha <= 0 || alpha >= 0.5 || math.IsNaN(alpha) {
				return usagef("give a significance level such as 0.05 or 0.01", "invalid --alpha %q: a probability above 0 and below 0.5", opts.Alpha)
			}
			if len(args) == 2 {
				if cmd.Flags().Changed("against") {
					return usagef("give one job with --against, or two sides without it", "--against with two sides to compare")
				}
				opts.BasePath, opts.NewPath = args[0], args[1]
			} else {
				opts.NewPath = args[0]
				opts.AgainstGiven = cmd.Flags().Changed("against")
			}
			opts.Compare = compare.CompareOptions{Threshold: thr, Direction: opts.Direction, Alpha: alpha}
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Threshold, "threshold", "5%", "the tolerated change of a metric whose rule gives none")
	f.StringVar(&opts.Alpha, "alpha", "0.05", "the significance level of the rank test over trials")
	f.StringVar(&opts.References, "references", "", "a references file: metrics: rules (first in line) and expected values per model and metric (see docs/ci.md)")
	_ = cmd.MarkFlagFilename("references", "yaml", "yml", "json")
	f.StringVar(&opts.Against, "against", "reference", "with one job: what it is compared against: reference, last, best or a job id")
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory of the jobs given by id (default $BENCHCTL_SHARED_DIR)")
	_ = cmd.MarkFlagDirname("shared-dir")
	choiceFlag(cmd, f, &opts.Direction, "metric-direction", "", results.AutoDirection, "which way is better for a metric no rule names: auto (guess from the name: times and latencies lower, the rest higher), higher or lower",
		results.AutoDirection, results.HigherIsBetter, results.LowerIsBetter)
	outputFlag(cmd, &opts.Output, collect.FormatsOf(collect.KindCompare)...)
	choiceFlag(cmd, f, &opts.Output, "format", "", "table", "old spelling of -o", collect.FormatsOf(collect.KindCompare)...)
	deprecate(cmd, "format", func(v string) string { return "-o " + v })
	return cmd
}

package main

import (
	"context"
	"errors"
	goio "io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
)

type compareOptions struct {
	threshold    string
	direction    string
	alpha        string
	output       string
	sharedDir    string
	against      string
	againstGiven bool
	references   string
	// set in RunE: the two sides, and the threshold and direction parsed
	basePath, newPath string
	compare           results.CompareOptions
}

func newCompareCmd(io iostreams.Streams) *cobra.Command {
	opts := &compareOptions{}
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
			thr, err := results.ParseThreshold(opts.threshold)
			if err != nil {
				return usagef("give a percentage, e.g. --threshold 5%", "invalid --threshold: %v", err)
			}
			alpha, err := strconv.ParseFloat(strings.TrimSpace(opts.alpha), 64)
			if err != nil || alpha <= 0 || alpha >= 0.5 || math.IsNaN(alpha) {
				return usagef("give a significance level such as 0.05 or 0.01", "invalid --alpha %q: a probability above 0 and below 0.5", opts.alpha)
			}
			if len(args) == 2 {
				if cmd.Flags().Changed("against") {
					return usagef("give one job with --against, or two sides without it", "--against with two sides to compare")
				}
				opts.basePath, opts.newPath = args[0], args[1]
			} else {
				opts.newPath = args[0]
				opts.againstGiven = cmd.Flags().Changed("against")
			}
			opts.compare = results.CompareOptions{Threshold: thr, Direction: opts.direction, Alpha: alpha}
			return compareRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.threshold, "threshold", "5%", "the tolerated change of a metric whose rule gives none")
	f.StringVar(&opts.alpha, "alpha", "0.05", "the significance level of the rank test over trials")
	f.StringVar(&opts.references, "references", "", "a references file: metrics: rules (first in line) and expected values per model and metric (see docs/ci.md)")
	_ = cmd.MarkFlagFilename("references", "yaml", "yml", "json")
	f.StringVar(&opts.against, "against", "reference", "with one job: what it is compared against: reference, last, best or a job id")
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory of the jobs given by id (default $BENCHCTL_SHARED_DIR)")
	_ = cmd.MarkFlagDirname("shared-dir")
	choiceFlag(cmd, f, &opts.direction, "metric-direction", "", results.AutoDirection, "which way is better for a metric no rule names: auto (guess from the name: times and latencies lower, the rest higher), higher or lower",
		results.AutoDirection, results.HigherIsBetter, results.LowerIsBetter)
	outputFlag(cmd, &opts.output, results.FormatsOf(results.KindCompare)...)
	choiceFlag(cmd, f, &opts.output, "format", "", "table", "old spelling of -o", results.FormatsOf(results.KindCompare)...)
	deprecate(cmd, "format", func(v string) string { return "-o " + v })
	return cmd
}

func compareRun(ctx context.Context, io iostreams.Streams, opts *compareOptions) error {
	var refs *manifest.References
	if opts.references != "" {
		var err error
		if refs, err = manifest.LoadReferences(opts.references); err != nil {
			return err
		}
	}
	if opts.basePath == "" && refs != nil && !opts.againstGiven {
		// The references file alone: NEW's rows against the expected values.
		cur, rules, err := compareSource(opts.newPath, opts.sharedDir)
		if err != nil {
			return err
		}
		opts.compare.Rules = append(slices.Clone(refs.Rules), rules...)
		c := &results.Comparison{Threshold: opts.compare.Threshold, Changes: results.CheckReferences(cur.Table, refs, opts.compare)}
		return writeComparison(io, opts, c)
	}
	if opts.basePath == "" {
		d, err := compareJob(opts.newPath, opts.sharedDir)
		if err != nil {
			return err
		}
		dir, err := sharedDir(opts.sharedDir)
		if err != nil {
			return err
		}
		against, err := results.Against(jobdir.Layout{Shared: dir}, d, opts.against)
		if err != nil {
			return err
		}
		opts.basePath = against.Path
		slog.Info("comparing", "job", jobdir.Name(d.JobID, d.Attempt), "against", jobdir.Name(against.JobID, against.Attempt), "as", opts.against)
	}
	base, baseRules, err := compareSource(opts.basePath, opts.sharedDir)
	if err != nil {
		return err
	}
	cur, newRules, err := compareSource(opts.newPath, opts.sharedDir)
	if err != nil {
		return err
	}
	// The references file's rules, then those of NEW's manifest, else of BASE's.
	opts.compare.Rules = results.JudgeRules(newRules, baseRules)
	if refs != nil {
		opts.compare.Rules = append(slices.Clone(refs.Rules), opts.compare.Rules...)
	}
	c := results.CompareSources(base, cur, opts.compare)
	if err := c.Err(); err != nil && !errors.As(err, new(*results.RegressionError)) {
		return err // nothing joined: no table of only-in rows
	}
	if refs != nil {
		c.Changes = append(c.Changes, results.CheckReferences(cur.Table, refs, opts.compare)...)
	}
	return writeComparison(io, opts, c)
}

// writeComparison prints a comparison in the -o format; a regression is the error.
func writeComparison(io iostreams.Streams, opts *compareOptions, c *results.Comparison) error {
	err := writeShown(io, opts.output, func(w goio.Writer) error {
		write := func(w goio.Writer) error { return results.ExportCompare(w, opts.output, c) }
		if opts.output == results.FormatTable {
			return colouredTable(io, "VERDICT", write)(w)
		}
		return write(w)
	})
	if err != nil {
		return err
	}
	return c.Err()
}

// compareSource reads one side of a comparison: a file (a perf.csv), a job folder, or a job
// id in the shared directory (its newest attempt).
func compareSource(arg, sharedFlag string) (results.CompareSource, []manifest.MetricRule, error) {
	fi, err := os.Stat(arg)
	switch {
	case err == nil && fi.IsDir():
		abs, err := filepath.Abs(arg)
		if err != nil {
			return results.CompareSource{}, nil, err
		}
		id, attempt := jobdir.SplitName(filepath.Base(abs))
		return results.ReadJobSource(jobdir.Dir{Path: abs, JobID: id, Attempt: attempt})
	case err == nil:
		t, err := results.ReadCompareFile(arg)
		return results.CompareSource{Table: t, Name: arg}, nil, err
	case !errors.Is(err, fs.ErrNotExist) || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".csv"):
		// A path that cannot be read: say so as a file.
		_, err := results.ReadCompareFile(arg)
		return results.CompareSource{}, nil, err
	}
	dir, err := sharedDir(sharedFlag)
	if err != nil {
		return results.CompareSource{}, nil, err
	}
	d, err := jobdir.Layout{Shared: dir}.Find(arg, -1)
	if err != nil {
		return results.CompareSource{}, nil, usagef("give a perf.csv file, a job folder, or the id of a collected job", "%s is neither a file nor a job: %v", arg, err)
	}
	return results.ReadJobSource(d)
}

// compareJob is the job folder arg, compare's one side, names: a folder, or a job id in the
// shared directory. A file (benchctl compare a.csv), or a path that names nothing, is invalid
// input that says what compare takes.
func compareJob(arg, sharedFlag string) (jobdir.Dir, error) {
	fi, err := os.Stat(arg)
	if err == nil && fi.IsDir() {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return jobdir.Dir{}, err
		}
		id, attempt := jobdir.SplitName(filepath.Base(abs))
		return jobdir.Dir{Path: abs, JobID: id, Attempt: attempt}, nil
	}
	what := ""
	switch {
	case err == nil && fi.Mode().IsRegular():
		what = "is a file"
	case err == nil:
		what = "is neither a file nor a job folder" // a FIFO, a device
	case errors.Is(err, fs.ErrNotExist) && (strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".csv")):
		what = "does not exist"
	}
	if what != "" {
		return jobdir.Dir{}, usagef("give the file it is compared with: benchctl compare OLD.csv "+arg+"; or a job, compared against --against (its manifest's reference by default): benchctl compare JOBID",
			"%s %s, and compare compares two perf.csv files or one job", arg, what)
	}
	dir, err := sharedDir(sharedFlag)
	if err != nil {
		return jobdir.Dir{}, err
	}
	d, err := jobdir.Layout{Shared: dir}.Find(arg, -1)
	if err != nil {
		return jobdir.Dir{}, usagef("with one side, give a job (its id or folder): it is compared against --against", "%v", err)
	}
	return d, nil
}

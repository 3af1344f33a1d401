package main

import (
	"context"
	goio "io"

	"github.com/benchctl/benchctl/results"
	"github.com/spf13/cobra"
)

type compareOptions struct {
	threshold string
	direction string
	output    string
	// set in RunE: the two files, and the threshold and direction parsed
	basePath, newPath string
	compare           results.CompareOptions
}

func newCompareCmd(io streams) *cobra.Command {
	opts := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASE.csv NEW.csv [--threshold 5%] [--metric-direction higher|lower]",
		Short: "Compare two perf.csv files and fail on regressions",
		Long: `Join two perf.csv files (or benchmark result CSVs) on model, metric and the key columns
both files have (batch_size, seq_len, message_size, precision, args, ...: the columns that tell
a sweep's rows apart; rows that differ in none of them are matched by position) and print the
change of every row. A row regresses when it is worse than the threshold in the direction that is
better (--metric-direction higher, the default, or lower; auto picks lower for metrics that
look like times: latency, seconds, ms, ...), when it had a number in BASE and has none in
NEW, or when its status column went from SUCCESS (or empty) to anything else. Rows found in only one file are listed, not errors. When a file holds rows of several
jobs (a perf.csv that collect --append appended to; the benchctl_job column), the rows of the last
job that has them count.

-o prints the table (the default), csv, json or markdown; --format, its old spelling, still
works with a warning until the next release.

Exit codes: 0 no regression, 3 a row regressed, 4 a file cannot be read or bad flags.`,
		Example: `  benchctl compare baseline/perf.csv jobs/123456/perf.csv
  benchctl compare base.csv new.csv --threshold 2.5% -o markdown
  benchctl compare base.csv new.csv --metric-direction lower   # latencies`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			thr, err := results.ParseThreshold(opts.threshold)
			if err != nil {
				return usagef("give a percentage, e.g. --threshold 5%", "invalid --threshold: %v", err)
			}
			opts.basePath, opts.newPath = args[0], args[1]
			opts.compare = results.CompareOptions{Threshold: thr, Direction: opts.direction}
			return compareRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.threshold, "threshold", "5%", "a row regresses when it is worse by more than this")
	choiceFlag(cmd, f, &opts.direction, "metric-direction", "", results.HigherIsBetter, "which way is better: higher, lower or auto",
		results.HigherIsBetter, results.LowerIsBetter, results.AutoDirection)
	outputFlag(cmd, &opts.output, tableFormats...)
	choiceFlag(cmd, f, &opts.output, "format", "", "table", "old spelling of -o", tableFormats...)
	deprecate(cmd, "format", func(v string) string { return "-o " + v })
	return cmd
}

func compareRun(ctx context.Context, io streams, opts *compareOptions) error {
	base, err := results.ReadCompareFile(opts.basePath)
	if err != nil {
		return err
	}
	cur, err := results.ReadCompareFile(opts.newPath)
	if err != nil {
		return err
	}
	c := results.Compare(base, cur, opts.compare)
	err = writeShown(io, opts.output, func(w goio.Writer) error {
		if opts.output == results.FormatJSON {
			return writeJSON(w, c)
		}
		return results.WriteComparison(w, opts.output, c)
	})
	if err != nil {
		return err
	}
	return c.Err()
}

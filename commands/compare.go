package commands

import (
	"context"
	"errors"
	goio "io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/collect"
	"github.com/benchctl/benchctl/results/compare"
)

// CompareOptions are benchctl compare's flags and sides.
type CompareOptions struct {
	Threshold    string
	Direction    string
	Alpha        string
	Output       string
	SharedDir    string
	Against      string
	AgainstGiven bool
	References   string
	// set in RunE: the two sides, and the threshold and direction parsed
	BasePath, NewPath string
	Compare           compare.CompareOptions
}

// Compare compares two perf.csv files or jobs (or a job against its reference) and prints
// the verdict of each row.
func Compare(ctx context.Context, io iostreams.Streams, opts *CompareOptions) error {
	var refs *manifest.References
	if opts.References != "" {
		var err error
		if refs, err = manifest.LoadReferences(opts.References); err != nil {
			return err
		}
	}
	if opts.BasePath == "" && refs != nil && !opts.AgainstGiven {
		// The references file alone: NEW's rows against the expected values.
		cur, rules, err := compareSource(opts.NewPath, opts.SharedDir)
		if err != nil {
			return err
		}
		opts.Compare.Rules = append(slices.Clone(refs.Rules), rules...)
		c := &compare.Comparison{Threshold: opts.Compare.Threshold, Changes: compare.CheckReferences(cur.Table, refs, opts.Compare)}
		return writeComparison(io, opts, c)
	}
	if opts.BasePath == "" {
		d, err := compareJob(opts.NewPath, opts.SharedDir)
		if err != nil {
			return err
		}
		dir, err := SharedDir(opts.SharedDir)
		if err != nil {
			return err
		}
		against, err := compare.Against(jobdir.Layout{Shared: dir}, d, opts.Against)
		if err != nil {
			return err
		}
		opts.BasePath = against.Path
		slog.Info("comparing", "job", jobdir.Name(d.JobID, d.Attempt), "against", jobdir.Name(against.JobID, against.Attempt), "as", opts.Against)
	}
	base, baseRules, err := compareSource(opts.BasePath, opts.SharedDir)
	if err != nil {
		return err
	}
	cur, newRules, err := compareSource(opts.NewPath, opts.SharedDir)
	if err != nil {
		return err
	}
	// The references file's rules, then those of NEW's manifest, else of BASE's.
	opts.Compare.Rules = compare.JudgeRules(newRules, baseRules)
	if refs != nil {
		opts.Compare.Rules = append(slices.Clone(refs.Rules), opts.Compare.Rules...)
	}
	c := compare.CompareSources(base, cur, opts.Compare)
	if err := c.Err(); err != nil && !errors.As(err, new(*results.RegressionError)) {
		return err // nothing joined: no table of only-in rows
	}
	if refs != nil {
		c.Changes = append(c.Changes, compare.CheckReferences(cur.Table, refs, opts.Compare)...)
	}
	return writeComparison(io, opts, c)
}

// writeComparison prints a comparison in the -o format; a regression is the error.
func writeComparison(io iostreams.Streams, opts *CompareOptions, c *compare.Comparison) error {
	err := writeShown(io, opts.Output, func(w goio.Writer) error {
		write := func(w goio.Writer) error { return collect.ExportCompare(w, opts.Output, c) }
		if opts.Output == results.FormatTable {
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
func compareSource(arg, sharedFlag string) (compare.CompareSource, []manifest.MetricRule, error) {
	fi, err := os.Stat(arg)
	switch {
	case err == nil && fi.IsDir():
		abs, err := filepath.Abs(arg)
		if err != nil {
			return compare.CompareSource{}, nil, err
		}
		id, attempt := jobdir.SplitName(filepath.Base(abs))
		return compare.ReadJobSource(jobdir.Dir{Path: abs, JobID: id, Attempt: attempt})
	case err == nil:
		t, err := compare.ReadCompareFile(arg)
		return compare.CompareSource{Table: t, Name: arg}, nil, err
	case !errors.Is(err, fs.ErrNotExist) || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".csv"):
		// A path that cannot be read: say so as a file.
		_, err := compare.ReadCompareFile(arg)
		return compare.CompareSource{}, nil, err
	}
	dir, err := SharedDir(sharedFlag)
	if err != nil {
		return compare.CompareSource{}, nil, err
	}
	d, err := jobdir.Layout{Shared: dir}.Find(arg, -1)
	if err != nil {
		return compare.CompareSource{}, nil, exitcode.Usagef("give a perf.csv file, a job folder, or the id of a collected job", "%s is neither a file nor a job: %v", arg, err)
	}
	return compare.ReadJobSource(d)
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
		return jobdir.Dir{}, exitcode.Usagef("give the file it is compared with: benchctl compare OLD.csv "+arg+"; or a job, compared against --against (its manifest's reference by default): benchctl compare JOBID",
			"%s %s, and compare compares two perf.csv files or one job", arg, what)
	}
	dir, err := SharedDir(sharedFlag)
	if err != nil {
		return jobdir.Dir{}, err
	}
	d, err := jobdir.Layout{Shared: dir}.Find(arg, -1)
	if err != nil {
		return jobdir.Dir{}, exitcode.Usagef("with one side, give a job (its id or folder): it is compared against --against", "%v", err)
	}
	return d, nil
}

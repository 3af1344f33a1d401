package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/internal/jsonlimit"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
)

// maxSummarySize and summaryLimits bound the summary.json compare reads (one of a
// 100,000-node job is tens of megabytes).
const maxSummarySize = 128 << 20

var summaryLimits = jsonlimit.Limits{Marks: 20_000_000, Containers: 4_000_000, Depth: 64}

// ReadJobSource reads a collected job folder as one side of a comparison: its perf.csv, the
// measured trials of each row from summary.json (a job with an experiment), and the
// manifest's metric rules from job.json. A folder collect has not written perf.csv into is
// an *InputError that says to collect it.
func ReadJobSource(dir jobdir.Dir) (CompareSource, []manifest.MetricRule, error) {
	name := "job " + jobdir.Name(dir.JobID, dir.Attempt)
	perf := dir.Output(jobdir.PerfFile)
	if _, err := os.Stat(perf); errors.Is(err, fs.ErrNotExist) {
		return CompareSource{}, nil, &results.InputError{Path: dir.Path, Err: fmt.Errorf("%s has no %s yet: collect it first (benchctl collect %s)", name, jobdir.PerfFile, dir.JobID)}
	}
	t, err := ReadCompareFile(perf)
	if err != nil {
		return CompareSource{}, nil, err
	}
	src := CompareSource{Table: t, Name: name}
	var rules []manifest.MetricRule
	if j, err := jobdir.ReadJob(dir.JobFile()); err == nil {
		rules = results.MetricRules(j.Manifest.Metrics)
	}
	if s, err := readSummary(dir.Output(jobdir.SummaryFile)); err == nil && s.Experiment != nil {
		src.Trials = trialsByRow(t, s.Experiment)
	}
	return src, rules, nil
}

// readSummary reads a summary.json (a regular file, bounded).
func readSummary(path string) (*results.Summary, error) {
	data, err := safefile.ReadFile(path, maxSummarySize)
	if err != nil {
		return nil, err
	}
	if err := jsonlimit.Check(data, summaryLimits); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	var s results.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return &s, nil
}

// trialsByRow gives each perf.csv row of an experiment its measured trials' values:
// perf.csv has one row per experiment row, in the same order; a row whose model, metric or
// variant differ from the experiment row at its place gets none (the files do not belong
// together).
func trialsByRow(t *results.Table, x *results.ExperimentSummary) [][]float64 {
	m, me, v := t.Col(results.ColModel), t.Col(results.ColMetric), t.Col("benchctl_variant")
	out := make([][]float64, len(t.Rows))
	for i := range t.Rows {
		if i >= len(x.Rows) {
			break
		}
		r := x.Rows[i]
		if strings.TrimSpace(t.Get(i, m)) != r.Model || strings.TrimSpace(t.Get(i, me)) != r.Metric || strings.TrimSpace(t.Get(i, v)) != r.Variant {
			continue
		}
		out[i] = r.Measured()
	}
	return out
}

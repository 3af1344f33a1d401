package results

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchctl/benchctl/manifest"

	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/results/stats"
)

// Formats of the table collect prints.
const (
	FormatTable    = "table"
	FormatCSV      = "csv"
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// EncodeSummary is summary.json's bytes.
func EncodeSummary(s *Summary) ([]byte, error) {
	data, err := json.Marshal(summarised(s))
	if err != nil {
		return nil, fmt.Errorf("encoding the summary: %w", err)
	}
	return textsafe.JSON(indentJSON(data)), nil // C1 and bidi controls as \u escapes: the same strings
}

// MaxSummaryRows is how many rows per benchmark summary.json lists with their per-node
// values; the rest are counted in rowsOmitted (every row is in perf.csv), so that a
// benchmark of many thousands of rows still gives a summary.json of a readable size.
const MaxSummaryRows = 1000

// summarised is s with at most MaxSummaryRows rows per benchmark, and every list that
// summary.json always has as [] rather than null when it is empty (a reader iterates it
// without a null check); s is not changed.
func summarised(s *Summary) *Summary {
	c := *s
	c.Attempts, c.NodeFailures, c.Problems = orEmpty(s.Attempts), orEmpty(s.NodeFailures), orEmpty(s.Problems)
	c.NodeRecords.Differs, c.NodeRecords.Without = orEmpty(s.NodeRecords.Differs), orEmpty(s.NodeRecords.Without)
	c.Benchmarks = make([]BenchmarkSummary, len(s.Benchmarks))
	for i, b := range s.Benchmarks {
		if n := len(b.Rows); n > MaxSummaryRows {
			b.Rows, b.RowsOmitted = b.Rows[:MaxSummaryRows], n-MaxSummaryRows
		}
		b.Candidates, b.Rows, b.Failed = orEmpty(b.Candidates), orEmpty(b.Rows), orEmpty(b.Failed)
		rows := make([]RowSummary, len(b.Rows))
		for j, r := range b.Rows {
			r.Stats.Values = orEmpty(r.Stats.Values)
			rows[j] = r
		}
		b.Rows = rows
		c.Benchmarks[i] = b
	}
	return &c
}

// orEmpty is s, or an empty list for a nil one.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// resultColumns are the table's columns: KEY tells apart rows of one model and metric (the
// benchmark's key columns, such as a message size, and the occurrence of a repeated key);
// PICKED is the node whose result file was picked for the row (the one with the most rows
// with a value), not the best node: the spread over nodes is MIN, MEDIAN, MAX and CV.
func resultColumns() []string {
	return []string{"BENCHMARK", "MODEL", "METRIC", "KEY", "PERFORMANCE", "NODES", "MIN", "MEDIAN", "MAX", "CV", "STATUS", "PICKED", "NOTE"}
}

// KeyText is a row's key columns as col=value (sorted), with #n for a repeated key.
func KeyText(identity map[string]string, occurrence int) string {
	keys := make([]string, 0, len(identity))
	for k := range identity {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		parts = append(parts, k+"="+strings.TrimSpace(identity[k]))
	}
	if occurrence > 1 {
		parts = append(parts, "#"+strconv.Itoa(occurrence))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func WriteRows(w io.Writer, markdown bool, s *Summary) error {
	if s.Experiment != nil {
		if err := writeExperimentRows(w, markdown, s.Experiment); err != nil {
			return err
		}
		return writeNotes(w, markdown, RecordNotes(s.NodeRecords))
	}
	cols := resultColumns()
	var lines [][]string
	for _, b := range s.Benchmarks {
		winner := "-"
		if b.Winner != nil {
			winner = b.Winner.Label()
		}
		for _, r := range b.Rows {
			st := r.Stats
			nodes, lo, med, hi, cv := "-", "-", "-", "-", "-"
			if st.Nodes > 0 {
				nodes = strconv.Itoa(st.Nodes) + "/" + strconv.Itoa(s.Nodes.Expected)
				lo, med, hi = st.Min, stats.FormatStat(st.Median), st.Max
				cv = strconv.FormatFloat(st.CV*100, 'f', 1, 64) + "%"
			}
			perf := r.Performance
			if perf == "" {
				perf = "-"
			}
			lines = append(lines, []string{b.Name, r.Model, Dash(r.Metric), KeyText(r.Identity, r.Occurrence), perf, nodes, lo, med, hi, cv, r.Status, winner,
				withNote(shorten(r.Reason, 100), ThrottleNote(b.Telemetry))})
		}
	}
	if len(s.Benchmarks) == 0 {
		// The same FAILURE row perf.csv gets: an empty table would look like a quiet success.
		name := CmpOr(s.Name, s.Job)
		lines = append(lines, []string{name, name, "-", "-", "-", "-", "-", "-", "-", "-", StatusFailure, "-", noBenchmarksReason})
	}
	if err := WriteGrid(w, markdown, cols, lines); err != nil {
		return err
	}
	return writeNotes(w, markdown, RecordNotes(s.NodeRecords))
}

// writeNotes writes the notes under a table, one line each ("note: ..."; a list item in
// markdown), escaped like the table's cells.
func writeNotes(w io.Writer, markdown bool, notes []string) error {
	if len(notes) == 0 {
		return nil
	}
	var b strings.Builder
	if markdown {
		b.WriteByte('\n')
	}
	for _, n := range notes {
		if markdown {
			b.WriteString("- " + markdownCell(n) + "\n")
		} else {
			b.WriteString("note: " + textsafe.Line(n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteGrid writes a header and rows as a markdown table or as aligned text columns: what
// collect and compare print. Every cell is one line with its control characters escaped
// (textsafe.Line: a container wrote most of them); in markdown, the characters that could
// end a cell or turn it into markup are escaped too (markdownCell).
func WriteGrid(w io.Writer, markdown bool, header []string, lines [][]string) error {
	row := func(l []string, cell func(string) string) []string {
		out := make([]string, len(l))
		for i, c := range l {
			out[i] = cell(c)
		}
		return out
	}
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(row(header, markdownCell), " | "), strings.Repeat("---|", len(header)))
		for _, l := range lines {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row(l, markdownCell), " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(row(header, textsafe.Line), "\t"))
	for _, l := range lines {
		fmt.Fprintln(tw, strings.Join(row(l, textsafe.Line), "\t"))
	}
	return tw.Flush()
}

// markdownEscaper backslash-escapes what would end a markdown table cell (|), or make
// markup of a cell's text: a backslash (which would escape the next |), a code span, an
// HTML tag or entity (&#124; or &#x202e;), a link or image.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "|", `\|`, "`", "\\`", "<", `\<`, ">", `\>`, "&", `\&`, "[", `\[`, "]", `\]`)

// markdownCell is a cell of a markdown table: one line (textsafe.Line), markup escaped.
func markdownCell(s string) string { return markdownEscaper.Replace(textsafe.Line(s)) }

func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeExperimentRows is the table of a job with an experiment: one line per benchmark,
// variant and row key, with the parameters as columns and the measured trials' median,
// the median's interval (and its coverage), CV and the outlier trials.
func writeExperimentRows(w io.Writer, markdown bool, x *ExperimentSummary) error {
	cols := []string{"BENCHMARK", "MODEL", "METRIC", "KEY"}
	for _, p := range x.Params {
		cols = append(cols, strings.ToUpper(p))
	}
	nodesCol := !slices.Contains(x.Params, manifest.ParamNodes) // else the nodes parameter's column says it
	if nodesCol {
		cols = append(cols, "NODES")
	}
	cols = append(cols, "TRIALS", "MEDIAN", "INTERVAL", "CV", "OUTLIERS", "STATUS", "NOTE")
	var lines [][]string
	for _, r := range x.Rows {
		l := []string{r.Benchmark, r.Model, Dash(r.Metric), KeyText(r.Identity, r.Occurrence)}
		v := x.Variants[r.variant]
		for _, p := range x.Params {
			val, ok := v.Param(p)
			if !ok {
				val = "-"
			}
			l = append(l, val)
		}
		st := r.Stats
		trials := strconv.Itoa(st.Trials)
		if r.Failed > 0 {
			trials += fmt.Sprintf(" (+%d failed)", r.Failed)
		}
		med, ci, cv, out := "-", "-", "-", "-"
		if st.Trials > 0 {
			med = stats.FormatStat(st.Median)
			cv = strconv.FormatFloat(st.CV*100, 'f', 1, 64) + "%"
		}
		if st.Trials > 1 {
			ci = fmt.Sprintf("%s to %s (%.0f%%)", stats.FormatStat(st.CILow), stats.FormatStat(st.CIHigh), st.CICoverage*100)
		}
		if len(st.Outliers) > 0 {
			parts := make([]string, len(st.Outliers))
			for i, o := range st.Outliers {
				parts[i] = "trial " + strconv.Itoa(o)
			}
			out = strings.Join(parts, ", ")
		}
		if nodesCol {
			l = append(l, strconv.Itoa(r.Nodes))
		}
		l = append(l, trials, med, ci, cv, out, r.Status, withNote(shorten(r.Reason, 100), trialThrottleNote(r.Telemetry)))
		lines = append(lines, l)
	}
	return WriteGrid(w, markdown, cols, lines)
}

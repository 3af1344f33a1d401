package collect

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/internal/jsonout"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/compare"
)

// FormatOpenMetrics is history's text for a metrics scraper (Prometheus, VictoriaMetrics).
const FormatOpenMetrics = "openmetrics"

// What an exporter can write: a collected job (collect), a comparison (compare), a
// history (history).
const (
	KindCollect = "collect"
	KindCompare = "compare"
	KindHistory = "history"
)

// Exporter is one output format and how it writes each kind of results (nil: the format
// has none of that kind). The table below is the one list of formats: the commands' -o
// flags, their help and their checks come from it. It lives here, in collect, because
// collect is the one results package that sees all three kinds: the summary (results),
// the comparison and the history (compare); the packages below it cannot import it.
type Exporter struct {
	Name    string
	Collect func(w io.Writer, s *results.Summary, perf *results.Table) error
	Compare func(w io.Writer, c *compare.Comparison) error
	History func(w io.Writer, rows []compare.HistoryRow) error
}

// exporters are the formats, in the order the flags list them (the first is the default).
// A function, not a variable: its writers name the formats in their own errors.
func exporters() []Exporter {
	return []Exporter{
		{Name: results.FormatTable,
			Collect: func(w io.Writer, s *results.Summary, _ *results.Table) error { return results.WriteRows(w, false, s) },
			Compare: func(w io.Writer, c *compare.Comparison) error {
				return compare.WriteComparison(w, results.FormatTable, c)
			},
			History: func(w io.Writer, rows []compare.HistoryRow) error { return compare.WriteHistory(w, false, rows) }},
		{Name: results.FormatCSV,
			Collect: func(w io.Writer, _ *results.Summary, perf *results.Table) error { return writeCSV(w, perf) },
			Compare: func(w io.Writer, c *compare.Comparison) error {
				return compare.WriteComparison(w, results.FormatCSV, c)
			},
			History: func(w io.Writer, rows []compare.HistoryRow) error { return writeCSV(w, compare.HistoryTable(rows)) }},
		{Name: results.FormatJSON,
			Collect: func(w io.Writer, s *results.Summary, _ *results.Table) error {
				data, err := results.EncodeSummary(s) // summary.json's bytes
				if err != nil {
					return err
				}
				_, err = w.Write(data)
				return err
			},
			Compare: func(w io.Writer, c *compare.Comparison) error { return jsonout.Write(w, c) },
			History: func(w io.Writer, rows []compare.HistoryRow) error { return jsonout.Write(w, rows) }},
		{Name: results.FormatMarkdown,
			Collect: func(w io.Writer, s *results.Summary, _ *results.Table) error { return results.WriteRows(w, true, s) },
			Compare: func(w io.Writer, c *compare.Comparison) error {
				return compare.WriteComparison(w, results.FormatMarkdown, c)
			},
			History: func(w io.Writer, rows []compare.HistoryRow) error { return compare.WriteHistory(w, true, rows) }},
		{Name: FormatOpenMetrics,
			History: compare.WriteOpenMetrics},
	}
}

func writeCSV(w io.Writer, t *results.Table) error {
	data, err := results.EncodeCSV(t)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// FormatsOf are the formats that write kind, the default first.
func FormatsOf(kind string) []string {
	var out []string
	for _, e := range exporters() {
		if e.has(kind) {
			out = append(out, e.Name)
		}
	}
	return out
}

func (e Exporter) has(kind string) bool {
	switch kind {
	case KindCollect:
		return e.Collect != nil
	case KindCompare:
		return e.Compare != nil
	case KindHistory:
		return e.History != nil
	}
	return false
}

// exporter is the format named, which must write kind.
func exporter(format, kind string) (Exporter, error) {
	all := exporters()
	i := slices.IndexFunc(all, func(e Exporter) bool { return e.Name == format })
	if i < 0 || !all[i].has(kind) {
		return Exporter{}, fmt.Errorf("unknown format %q for %s (use %s)", format, kind, strings.Join(FormatsOf(kind), ", "))
	}
	return all[i], nil
}

// ExportCollect writes a collected job in format: table or markdown one line per perf.csv
// row with its spread, csv perf.csv itself, json summary.json.
func ExportCollect(w io.Writer, format string, s *results.Summary, perf *results.Table) error {
	e, err := exporter(format, KindCollect)
	if err != nil {
		return err
	}
	return e.Collect(w, s, perf)
}

// ExportCompare writes a comparison in format.
func ExportCompare(w io.Writer, format string, c *compare.Comparison) error {
	e, err := exporter(format, KindCompare)
	if err != nil {
		return err
	}
	return e.Compare(w, c)
}

// ExportHistory writes a history in format.
func ExportHistory(w io.Writer, format string, rows []compare.HistoryRow) error {
	e, err := exporter(format, KindHistory)
	if err != nil {
		return err
	}
	return e.History(w, rows)
}

// WriteResults writes a collected job to w in format (ExportCollect).
func WriteResults(w io.Writer, format string, s *results.Summary, perf *results.Table) error {
	return ExportCollect(w, format, s, perf)
}

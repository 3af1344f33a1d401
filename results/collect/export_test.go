package collect

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/results"
)

// One table names every format: each command's formats, the default first, and a format a
// kind has not is refused naming the ones it has.
func TestTheExporterTable(t *testing.T) {
	for kind, want := range map[string][]string{
		KindCollect: {results.FormatTable, results.FormatCSV, results.FormatJSON, results.FormatMarkdown},
		KindCompare: {results.FormatTable, results.FormatCSV, results.FormatJSON, results.FormatMarkdown},
		KindHistory: {results.FormatTable, results.FormatCSV, results.FormatJSON, results.FormatMarkdown, FormatOpenMetrics},
	} {
		if got := FormatsOf(kind); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", kind, got, want)
		}
	}
	var b bytes.Buffer
	err := ExportCollect(&b, FormatOpenMetrics, &results.Summary{}, &results.Table{})
	if err == nil || !strings.Contains(err.Error(), `unknown format "openmetrics" for collect (use table, csv, json, markdown)`) || b.Len() > 0 {
		t.Errorf("%v, wrote %q", err, b.String())
	}
	if err := ExportHistory(&b, "yaml", nil); err == nil || !strings.Contains(err.Error(), "openmetrics") {
		t.Errorf("%v", err)
	}
	// An empty history is [] in JSON, never null.
	b.Reset()
	if err := ExportHistory(&b, results.FormatJSON, nil); err != nil || b.String() != "[]\n" {
		t.Errorf("%q %v", b.String(), err)
	}
}

package results

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// One table names every format: each command's formats, the default first, and a format a
// kind has not is refused naming the ones it has.
func TestTheExporterTable(t *testing.T) {
	for kind, want := range map[string][]string{
		KindCollect: {FormatTable, FormatCSV, FormatJSON, FormatMarkdown},
		KindCompare: {FormatTable, FormatCSV, FormatJSON, FormatMarkdown},
		KindHistory: {FormatTable, FormatCSV, FormatJSON, FormatMarkdown, FormatOpenMetrics},
	} {
		if got := FormatsOf(kind); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", kind, got, want)
		}
	}
	var b bytes.Buffer
	err := ExportCollect(&b, FormatOpenMetrics, &Summary{}, &Table{})
	if err == nil || !strings.Contains(err.Error(), `unknown format "openmetrics" for collect (use table, csv, json, markdown)`) || b.Len() > 0 {
		t.Errorf("%v, wrote %q", err, b.String())
	}
	if err := ExportHistory(&b, "yaml", nil); err == nil || !strings.Contains(err.Error(), "openmetrics") {
		t.Errorf("%v", err)
	}
	// An empty history is [] in JSON, never null.
	b.Reset()
	if err := ExportHistory(&b, FormatJSON, nil); err != nil || b.String() != "[]\n" {
		t.Errorf("%q %v", b.String(), err)
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// report.html escapes a hostile cell for HTML (html/template) and shows its control and
// bidi characters as text, so that a model name cannot add markup nor reorder the page.
func TestReportShowsHostileCellsAsText(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "68", 1)
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\n"+
		"\"<script>alert(1)</script><img src=x onerror=alert(2)>\",1,\"\"\"><b>\u202eevil\x1b[2J\"\n")
	s := resultstest.Aggregate(t, job)
	html := render(t, s)
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>", "\u202e", "\x1b"} {
		if strings.Contains(html, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `\u202eevil\x1b[2J`} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

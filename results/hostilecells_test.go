package results

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// perf.csv now writes "--steps 10" as "'--steps 10": a perf.csv of an older benchctl (or a
// results CSV) and a new one still meet on model, metric and key columns, in compare and
// in collect --baseline.
func TestNeutralisedCellsStillMatch(t *testing.T) {
	old := table("model,metric,args,performance", "-m,x,--steps 10,100", "n,@y,--steps 20,100")
	newer := table("model,metric,args,performance", "'-m,x,'--steps 10,110", "n,'@y,'--steps 20,90")
	c := Compare(old, newer, CompareOptions{Threshold: 5})
	for _, ch := range c.Changes {
		if ch.Verdict == VerdictOnlyBase || ch.Verdict == VerdictOnlyNew {
			t.Errorf("%s %s %s: %s", ch.Model, ch.Metric, ch.Key, ch.Verdict)
		}
	}
	perf := table("model,metric,args,performance,relative_change", "-m,x,--steps 10,110,", "n,@y,--steps 20,90,")
	base := table("model,metric,args,performance", "'-m,x,'--steps 10,100", "n,'@y,'--steps 20,100")
	if n := ApplyBaseline(perf, base); n != 2 {
		t.Errorf("baseline matched %d of 2 rows: %v", n, perf.Rows)
	}
}

// report.html escapes a hostile cell for HTML (html/template) and shows its control and
// bidi characters as text, so that a model name cannot add markup nor reorder the page.
func TestReportShowsHostileCellsAsText(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "68", 1)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\n"+
		"\"<script>alert(1)</script><img src=x onerror=alert(2)>\",1,\"\"\"><b>\u202eevil\x1b[2J\"\n")
	s := aggregate(t, job)
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

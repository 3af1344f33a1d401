package results

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// hostileCSV is a results CSV a hostile container could write: spreadsheet formulas in
// cells and in a column name, numbers that look like formulas but are not, and terminal
// escapes (an OSC 8 hyperlink, a colour, a CSI as a C1 rune, a bidi override) in cells.
const hostileCSV = "model,performance,metric,\"=HYPERLINK(\"\"http://evil\"\")\",note\n" +
	"\"=cmd|' /C calc'!A0\",-1.5,@SUM(1),a,\"\x1b]8;;http://evil\x07click\x1b]8;;\x07\"\n" +
	"+3e2,+3e2,-0,b,\"\x1b[31mred\tcell\r\"\n" +
	"-inf,1e-5,-1,c,\"x\u009b2Jy \u202eevil\u2066 |pipe| `tick`\"\n" +
	"tab,7,\"\rCR\",\"-1,234\",\"\tTAB\"\n"

// hostileJob is a one-node job folder whose CSV is hostileCSV.
func hostileJob(t *testing.T) (shared, job string) {
	t.Helper()
	shared = t.TempDir()
	job = writeJob(t, shared, "66", 1)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, hostileCSV)
	return shared, job
}

// Formulas a container wrote reached perf.csv, collect --append's file and -o csv verbatim
// (=HYPERLINK, =cmd|...): every cell and column name that a spreadsheet would take for a
// formula is now written with a leading single quote, while numbers (-1.5, +3e2, -0, 1e-5,
// -inf) stay as written; summary.json keeps the raw values.
func TestFormulasAreNeutralised(t *testing.T) {
	shared, job := hostileJob(t)
	appendTo := filepath.Join(t.TempDir(), "mine.csv")
	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "66", Attempt: -1, AppendTo: appendTo,
		Aggregate: AggregateOptions{Now: fixedNow}})
	if err != nil {
		t.Fatal(err)
	}
	perf, _ := os.ReadFile(jobdirtest.At(job).Output(jobdir.PerfFile))
	appended, _ := os.ReadFile(appendTo)
	var out bytes.Buffer
	if err := WriteResults(&out, FormatCSV, col.Summary, col.Perf); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"perf.csv": perf, "--append": appended, "-o csv": out.Bytes()} {
		tbl, err := parseCSV(name, data, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, h := range tbl.Header {
			if formulaLike(h) {
				t.Errorf("%s: column %q is a formula", name, h)
			}
		}
		if tbl.Col("'=HYPERLINK(\"http://evil\")") < 0 {
			t.Errorf("%s: the formula column is not kept, quoted: %q", name, tbl.Header)
		}
		cells := map[string]bool{}
		for _, r := range tbl.Rows {
			for _, c := range r {
				if formulaLike(c) {
					t.Errorf("%s: cell %q is a formula", name, c)
				}
				cells[c] = true
			}
		}
		for _, want := range []string{"'=cmd|' /C calc'!A0", "'@SUM(1)", "'\tTAB", "'\rCR", "'-1,234", // neutralised (-1,234 is no number)
			"-1.5", "+3e2", "-0", "1e-5", "-inf", "-1"} { // numbers, as written
			if !cells[want] {
				t.Errorf("%s: no cell %q", name, want)
			}
		}
	}
	// A second append leaves the quoted cells as they are (no '' doubling).
	if err := AppendCSV(context.Background(), appendTo, col.Perf); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(appendTo)
	if bytes.Contains(again, []byte("''=")) {
		t.Errorf("a second append quoted a quoted cell:\n%s", again)
	}
	sum, _ := os.ReadFile(jobdirtest.At(job).Output(jobdir.SummaryFile))
	var s Summary
	if err := json.Unmarshal(sum, &s); err != nil {
		t.Fatal(err)
	}
	if m := s.Benchmarks[0].Rows[0].Model; m != "=cmd|' /C calc'!A0" {
		t.Errorf("summary.json's model is %q, want the raw value", m)
	}
}

// formulaLike: a cell a spreadsheet would evaluate, by OWASP's rule, that is not a number.
func formulaLike(c string) bool {
	if c == "" || !strings.ContainsRune("=+-@\t\r", rune(c[0])) {
		return false
	}
	for _, n := range []string{"-1.5", "+3e2", "-0", "-inf", "-1", "-1.00"} {
		if c == n {
			return false
		}
	}
	return true
}

// escapeCSV adds rows whose shown columns (model, metric) carry terminal escapes.
const escapeCSV = hostileCSV + "\"\x1b[2J\x1b]0;pwned\x07m\u202eodel\",5,\"u\u009b31m\u2028x|y`z\\\",d,e\n"

// unsafeOnScreen returns the first rune of out that a terminal would act on rather than
// show: a C0 control other than the newline (a tab too: a table cell is one line), DEL, a
// C1 control, a line or paragraph separator, a bidi control, or a byte that is not UTF-8.
func unsafeOnScreen(out string) (rune, bool) {
	for i, r := range out {
		switch {
		case r == '\n':
		case r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"),
			r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return r, true
		}
	}
	return 0, false
}

// Escape sequences a container wrote (in a CSV cell, or in a log line quoted by the log
// scan's reason) reached the terminal through collect's table, markdown and error: they are
// now shown escaped (\x1b, \u202e), and a markdown cell cannot break out of its table.
func TestEscapesNeverReachTheScreen(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "67", 2)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, escapeCSV)
	writeNode(t, job, 1, jobdir.OutcomeFailure, "")
	// the reason runner records when the log scan matched a line with escapes
	reason := "log: line 3 contains the error pattern \"FAILED\": \x1b]0;pwned\x07 FAILED \u202e\u0085"
	end := fixedNow()
	st := jobdir.Status{Version: 1, Rank: 1, Host: "h1", Outcome: jobdir.OutcomeFailure, ExitCode: 3, FinishedAt: &end, Error: reason,
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeFailure, ExitCode: 3, Error: reason}}}
	data, _ := json.Marshal(st)
	os.WriteFile(nodeOf(job, 1).Status(), data, 0o644)
	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "67", Attempt: -1, Aggregate: AggregateOptions{Now: fixedNow}})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatTable, FormatMarkdown, FormatJSON} {
		var out bytes.Buffer
		if err := WriteResults(&out, format, col.Summary, col.Perf); err != nil {
			t.Fatal(err)
		}
		if r, bad := unsafeOnScreen(out.String()); bad {
			t.Errorf("-o %s prints %U:\n%s", format, r, out.String())
		}
		shown := `\x1b]0;pwned\x07m\u202eodel`
		if format == FormatMarkdown {
			shown = `\\x1b\]0;pwned\\x07m\\u202eodel` // a markdown viewer shows \x1b]0;...
		}
		if format != FormatJSON && !strings.Contains(out.String(), shown) {
			t.Errorf("-o %s does not show the escaped model:\n%s", format, out.String())
		}
		if format == FormatMarkdown {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			want := markdownCells(lines[0])
			for _, l := range lines[2:] {
				if n := markdownCells(l); n != want {
					t.Errorf("markdown line has %d cells, the header %d: %s", n, want, l)
				}
			}
		}
	}
	err = col.Summary.Err()
	if err == nil {
		t.Fatal("no failure")
	}
	if r, bad := unsafeOnScreen(err.Error()); bad {
		t.Errorf("the error prints %U: %s", r, err)
	}
	if !strings.Contains(err.Error(), `\x1b]0;pwned\x07 FAILED \u202e`) {
		t.Errorf("the error does not show the escaped log line: %s", err)
	}
	c := Compare(col.Perf, col.Perf, CompareOptions{})
	for _, format := range []string{FormatTable, FormatMarkdown} {
		var out bytes.Buffer
		if err := WriteComparison(&out, format, c); err != nil {
			t.Fatal(err)
		}
		if r, bad := unsafeOnScreen(out.String()); bad {
			t.Errorf("compare -o %s prints %U:\n%s", format, r, out.String())
		}
	}
}

// markdownCells counts the cells of a markdown table line: the '|' not escaped by a '\'.
func markdownCells(line string) int {
	n, esc := 0, false
	for _, r := range line {
		switch {
		case esc:
			esc = false
		case r == '\\':
			esc = true
		case r == '|':
			n++
		}
	}
	return n - 1
}

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

package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/compare"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// Formulas a container wrote reached perf.csv, collect --append's file and -o csv verbatim
// (=HYPERLINK, =cmd|...): every cell and column name that a spreadsheet would take for a
// formula is now written with a leading single quote, while numbers (-1.5, +3e2, -0, 1e-5,
// -inf) stay as written; summary.json keeps the raw values.
func TestFormulasAreNeutralised(t *testing.T) {
	shared, job := hostileJob(t)
	appendTo := filepath.Join(t.TempDir(), "mine.csv")
	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "66", Attempt: -1, AppendTo: appendTo,
		Aggregate: results.AggregateOptions{Now: resultstest.FixedNow}})
	if err != nil {
		t.Fatal(err)
	}
	perf, _ := os.ReadFile(jobdirtest.At(job).Output(jobdir.PerfFile))
	appended, _ := os.ReadFile(appendTo)
	var out bytes.Buffer
	if err := WriteResults(&out, results.FormatCSV, col.Summary, col.Perf); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"perf.csv": perf, "--append": appended, "-o csv": out.Bytes()} {
		tbl, err := results.ParseTable(name, data)
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
	var s results.Summary
	if err := json.Unmarshal(sum, &s); err != nil {
		t.Fatal(err)
	}
	if m := s.Benchmarks[0].Rows[0].Model; m != "=cmd|' /C calc'!A0" {
		t.Errorf("summary.json's model is %q, want the raw value", m)
	}
}

// Escape sequences a container wrote (in a CSV cell, or in a log line quoted by the log
// scan's reason) reached the terminal through collect's table, markdown and error: they are
// now shown escaped (\x1b, \u202e), and a markdown cell cannot break out of its table.
func TestEscapesNeverReachTheScreen(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "67", 2)
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, escapeCSV)
	resultstest.WriteNode(t, job, 1, jobdir.OutcomeFailure, "")
	// the reason runner records when the log scan matched a line with escapes
	reason := "log: line 3 contains the error pattern \"FAILED\": \x1b]0;pwned\x07 FAILED \u202e\u0085"
	end := resultstest.FixedNow()
	st := jobdir.Status{Version: 1, Rank: 1, Host: "h1", Outcome: jobdir.OutcomeFailure, ExitCode: 3, FinishedAt: &end, Error: reason,
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeFailure, ExitCode: 3, Error: reason}}}
	data, _ := json.Marshal(st)
	os.WriteFile(resultstest.NodeOf(job, 1).Status(), data, 0o644)
	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "67", Attempt: -1, Aggregate: results.AggregateOptions{Now: resultstest.FixedNow}})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{results.FormatTable, results.FormatMarkdown, results.FormatJSON} {
		var out bytes.Buffer
		if err := WriteResults(&out, format, col.Summary, col.Perf); err != nil {
			t.Fatal(err)
		}
		if r, bad := unsafeOnScreen(out.String()); bad {
			t.Errorf("-o %s prints %U:\n%s", format, r, out.String())
		}
		shown := `\x1b]0;pwned\x07m\u202eodel`
		if format == results.FormatMarkdown {
			shown = `\\x1b\]0;pwned\\x07m\\u202eodel` // a markdown viewer shows \x1b]0;...
		}
		if format != results.FormatJSON && !strings.Contains(out.String(), shown) {
			t.Errorf("-o %s does not show the escaped model:\n%s", format, out.String())
		}
		if format == results.FormatMarkdown {
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
	c := compare.Compare(col.Perf, col.Perf, compare.CompareOptions{})
	for _, format := range []string{results.FormatTable, results.FormatMarkdown} {
		var out bytes.Buffer
		if err := compare.WriteComparison(&out, format, c); err != nil {
			t.Fatal(err)
		}
		if r, bad := unsafeOnScreen(out.String()); bad {
			t.Errorf("compare -o %s prints %U:\n%s", format, r, out.String())
		}
	}
}

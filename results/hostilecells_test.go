package results

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
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
	perf, _ := os.ReadFile(filepath.Join(job, PerfFile))
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
	sum, _ := os.ReadFile(filepath.Join(job, SummaryFile))
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


package compare

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// JUnit XML for CI test reporters (GitLab, Jenkins, GitHub): one test case per row of the
// job's perf.csv (a benchmark, variant and metric), classname the benchmark. A row fails
// when its status is not SUCCESS, or when the comparison (collect --check) says it
// regressed; the failure says the verdict and the numbers. With a comparison, a row it could
// not judge (no base row, or inconclusive) is still a pass, with the reason in its output.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr,omitempty"`
	Failure *junitFailure `xml:"failure,omitempty"`
	Skipped *junitSkipped `xml:"skipped,omitempty"`
	Out     string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes a collected job's rows as JUnit XML; cmp, when not nil, is the job's
// comparison against its reference (collect --check) and against is what it was compared
// with ("job 123 (the reference)").
func WriteJUnit(w io.Writer, s *results.Summary, perf *results.Table, cmp *Comparison, against string) error {
	suite := junitSuite{Name: strings.TrimSpace(results.CmpOr(s.Name, "benchctl") + " job " + s.Job)}
	if s.StartedAt != nil {
		suite.Timestamp = s.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	col := func(name string) int { return perf.Col(name) }
	// Each row's benchmark and change, looked up once: per row, a walk of every benchmark
	// and every change made the writer quadratic in rows.
	benchOfRow := rowBenchmarks(s, len(perf.Rows))
	var changes map[int]*Change
	if cmp != nil {
		changes = cmp.changesByRow()
	}
	cm, cme, cp, cst, creason, cvar, cdur := col(results.ColModel), col(results.ColMetric), col(results.ColPerformance), col(results.ColStatus), col("benchctl_reason"), col("benchctl_variant"), col("test_duration")
	for r := range perf.Rows {
		model, metric := perf.Get(r, cm), perf.Get(r, cme)
		name := strings.Join(NonEmpty(model, metric), " ")
		keys := keyValues(perf, r)
		if v := perf.Get(r, cvar); v != "" {
			keys = append(keys, v)
		}
		if len(keys) > 0 {
			name += " [" + strings.Join(keys, " ") + "]"
		}
		tc := junitCase{Class: results.CmpOr(benchOfRow[r], model), Name: name}
		if d, ok := stats.ParsePerformance(perf.Get(r, cdur)); ok && d >= 0 {
			tc.Time = strconv.FormatFloat(d, 'f', -1, 64) // a report reads seconds; a CSV's "N/A" is left out
		}
		out := []string{fmt.Sprintf("performance %s %s", results.CmpOr(perf.Get(r, cp), "-"), metric)}
		if st := strings.ToUpper(strings.TrimSpace(perf.Get(r, cst))); st != results.StatusSuccess {
			tc.Failure = &junitFailure{Type: "failure", Message: "status " + results.CmpOr(st, "missing"), Text: perf.Get(r, creason)}
		}
		if cmp != nil {
			ch := changes[r]
			switch {
			case ch == nil || ch.Verdict == VerdictOnlyNew:
				out = append(out, "not compared: "+against+" has no such row")
			default:
				what := fmt.Sprintf("%s against %s: base %s, new %s", ch.Verdict, against, results.CmpOr(ch.Base, "-"), results.CmpOr(ch.New, "-"))
				if ch.Percent != nil {
					what += fmt.Sprintf(", change %s (tolerance %s%%, %s is better)", FormatPercent(*ch.Percent, ch.Tolerance), stats.FormatStat(ch.Tolerance), ch.Direction)
				}
				if note := ChangeNote(*ch); note != "" {
					what += "; " + note
				}
				out = append(out, what)
				if ch.Verdict == VerdictRegressed && tc.Failure == nil {
					tc.Failure = &junitFailure{Type: VerdictRegressed, Message: what}
				}
			}
		}
		tc.Out = strings.Join(out, "\n")
		suite.Cases = append(suite.Cases, tc)
	}
	for _, tc := range suite.Cases {
		suite.Tests++
		if tc.Failure != nil {
			suite.Failures++
		}
		if tc.Skipped != nil {
			suite.Skipped++
		}
	}
	doc := junitSuites{Name: "benchctl", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// rowBenchmarks is the benchmark of each of perf.csv's rows: in a job with an experiment
// the experiment row's, else the one whose rows it is among ("" past them: the row's model
// stands for it).
func rowBenchmarks(s *results.Summary, rows int) []string {
	out := make([]string, rows)
	r := 0
	for _, b := range s.Benchmarks {
		for range b.Rows {
			if r >= rows {
				break
			}
			out[r] = b.Name
			r++
		}
	}
	if s.Experiment != nil {
		for r := 0; r < rows && r < len(s.Experiment.Rows); r++ {
			out[r] = s.Experiment.Rows[r].Benchmark
		}
	}
	return out
}

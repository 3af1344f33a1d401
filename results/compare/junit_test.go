package compare

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/results"
)

// junitJob is a job of n rows over several benchmarks, and a base whose row i is 10 %
// better for every third row.
func junitJob(n int) (*results.Summary, *results.Table, *results.Table) {
	s := &results.Summary{Job: "9"}
	perf := &results.Table{Header: []string{"model", "metric", "performance", "status"}}
	base := &results.Table{Header: perf.Header}
	for b := 0; b*100 < n; b++ {
		bs := results.BenchmarkSummary{Name: fmt.Sprintf("bench%d", b)}
		for i := b * 100; i < min(n, (b+1)*100); i++ {
			perf.Rows = append(perf.Rows, []string{fmt.Sprintf("m%d", i), "x", "100", "SUCCESS"})
			bp := "100"
			if i%3 == 0 {
				bp = "110"
			}
			base.Rows = append(base.Rows, []string{fmt.Sprintf("m%d", i), "x", bp, "SUCCESS"})
			bs.Rows = append(bs.Rows, results.RowSummary{})
		}
		s.Benchmarks = append(s.Benchmarks, bs)
	}
	return s, perf, base
}

// Each row is a test case of its benchmark; a regressed row fails with its change; the
// cases are the rows, in order, whatever their number.
func TestJUnitRowsTheirBenchmarksAndChanges(t *testing.T) {
	s, perf, base := junitJob(250)
	cmp := Compare(base, perf, CompareOptions{Threshold: 5})
	var b bytes.Buffer
	if err := WriteJUnit(&b, s, perf, cmp, "job 8"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, `tests="250" failures="84"`) {
		t.Errorf("counts: %.400s", out)
	}
	for _, want := range []string{`<testcase classname="bench0" name="m0 x">`, `<testcase classname="bench2" name="m249 x">`,
		`<failure message="regressed against job 8: base 110, new 100`, `<testcase classname="bench1" name="m100 x">`} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s", want)
		}
	}
	if i, j := strings.Index(out, `name="m99 x"`), strings.Index(out, `name="m100 x"`); i < 0 || j < i {
		t.Error("the cases are not in the rows' order")
	}
}

// The writer's cost per row does not grow with the rows (measured: docs/PERFORMANCE.md).
func BenchmarkJUnit100k(b *testing.B) {
	s, perf, base := junitJob(100_000)
	cmp := Compare(base, perf, CompareOptions{Threshold: 5})
	for b.Loop() {
		if err := WriteJUnit(&bytes.Buffer{}, s, perf, cmp, "job 8"); err != nil {
			b.Fatal(err)
		}
	}
}

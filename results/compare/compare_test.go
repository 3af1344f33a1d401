package compare

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/results"
)

func table(rows ...string) *results.Table {
	t, err := results.ParseCSV("t.csv", []byte(strings.Join(rows, "\n")+"\n"))
	if err != nil {
		panic(err)
	}
	return t
}

func TestCompare(t *testing.T) {
	base := table("model,metric,performance",
		"a,samples_per_second,100", "b,samples_per_second,100", "c,latency_ms,10", "d,x,50", "gone,x,1", "e,x,1", "z,x,0")
	newer := table("model,metric,performance,extra",
		"a,samples_per_second,90,q", "b,samples_per_second,103,q", "c,latency_ms,12,q", "d,x,,q", "e,x,2,q", "fresh,x,5,q", "z,x,3,q")
	cases := []struct {
		direction string
		threshold float64
		want      map[string]string // model -> verdict
	}{
		{results.HigherIsBetter, 5, map[string]string{"a": VerdictRegressed, "b": VerdictSame, "c": VerdictImproved, "d": VerdictRegressed,
			"gone": VerdictOnlyBase, "e": VerdictImproved, "fresh": VerdictOnlyNew, "z": VerdictFromZero}},
		{results.LowerIsBetter, 5, map[string]string{"a": VerdictImproved, "b": VerdictSame, "c": VerdictRegressed, "e": VerdictRegressed}},
		{results.AutoDirection, 5, map[string]string{"a": VerdictRegressed, "c": VerdictRegressed, "e": VerdictImproved}},
		{results.HigherIsBetter, 15, map[string]string{"a": VerdictSame, "c": VerdictImproved}},
	}
	for _, c := range cases {
		t.Run(c.direction, func(t *testing.T) {
			cmp := Compare(base, newer, CompareOptions{Threshold: c.threshold, Direction: c.direction})
			got := map[string]string{}
			for _, ch := range cmp.Changes {
				got[ch.Model] = ch.Verdict
			}
			for m, v := range c.want {
				if got[m] != v {
					t.Errorf("%s: %q, want %q", m, got[m], v)
				}
			}
			var re *results.RegressionError
			if errors.As(cmp.Err(), &re) != strings.Contains(strings.Join(values(got), ","), VerdictRegressed) {
				t.Errorf("Err() = %v", cmp.Err())
			}
		})
	}
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// An appended perf.csv holds several jobs: the rows of the last job that has a row count.
func TestCompareLastJobWins(t *testing.T) {
	base := table("model,metric,performance,benchctl_job", "a,x,10,1", "b,y,5,1", "a,x,100,2")
	cmp := Compare(base, table("model,metric,performance", "a,x,100", "b,y,5"), CompareOptions{Threshold: 1})
	if len(cmp.Changes) != 2 || cmp.Changes[0].Verdict != VerdictSame || cmp.Changes[1].Verdict != VerdictSame || cmp.Err() != nil {
		t.Fatalf("%+v", cmp.Changes)
	}
}

// A sweep: rows of one model and metric told apart by a key column, or by position.
func TestCompareSweepRows(t *testing.T) {
	base := table("model,metric,performance,batch_size", "r,img/s,100,32", "r,img/s,200,64", "p,x,1,", "p,x,2,")
	worse := table("model,metric,performance,batch_size", "r,img/s,200,64", "r,img/s,50,32", "p,x,1,", "p,x,1,")
	cmp := Compare(base, worse, CompareOptions{Threshold: 5})
	got := map[string]string{}
	for _, ch := range cmp.Changes {
		got[ch.Model+" "+ch.Key] = ch.Verdict
	}
	want := map[string]string{"r batch_size=32": VerdictRegressed, "r batch_size=64": VerdictSame, "p #1": VerdictSame, "p #2": VerdictRegressed}
	if len(cmp.Changes) != 4 || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if err := cmp.Err(); err == nil || !strings.Contains(err.Error(), "r img/s batch_size=32: -50.00% (tolerance 5%)") {
		t.Fatalf("regression error %v", err)
	}
}

// A change too large for a float64 percentage still gets a verdict, and JSON output works.
func TestCompareInfiniteChange(t *testing.T) {
	cmp := Compare(table("model,metric,performance", "a,x,1e-308"), table("model,metric,performance", "a,x,1e308"), CompareOptions{Threshold: 5})
	if ch := cmp.Changes[0]; ch.Percent != nil || ch.Verdict != VerdictImproved {
		t.Fatalf("%+v", ch)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, results.FormatJSON, cmp); err != nil {
		t.Fatal(err)
	}
}

func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]float64{"5%": 5, "5": 5, " 2.5 % ": 2.5, "0": 0} {
		if got, err := ParseThreshold(in); err != nil || got != want {
			t.Errorf("ParseThreshold(%q) = %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "-1%", "five", "NaN"} {
		if _, err := ParseThreshold(in); err == nil {
			t.Errorf("ParseThreshold(%q) accepted", in)
		}
	}
}

func TestWriteComparisonFormats(t *testing.T) {
	cmp := Compare(table("model,metric,performance", "a,x,100"), table("model,metric,performance", "a,x,90"), CompareOptions{Threshold: 5})
	for format, want := range map[string]string{results.FormatTable: "-10.00%", results.FormatMarkdown: "| a | x | - | 100 | 90 | -10.00% |", results.FormatCSV: "a,x,,100,90,-10,higher,5,regressed,single-trial", results.FormatJSON: `"verdict": "regressed"`} {
		var buf bytes.Buffer
		if err := WriteComparison(&buf, format, cmp); err != nil || !strings.Contains(buf.String(), want) {
			t.Errorf("%s: %v\n%s", format, err, buf.String())
		}
	}
}

// A row that failed where it succeeded is a regression, whatever number it still carries;
// one that failed in both is judged by its numbers.
func TestCompareStatus(t *testing.T) {
	base := table("model,metric,performance,status", "a,x,100,SUCCESS", "b,x,100,FAILURE", "c,x,100,")
	newer := table("model,metric,performance,status", "a,x,100,FAILURE", "b,x,100,FAILURE", "c,x,100,failure")
	c := Compare(base, newer, CompareOptions{Threshold: 5})
	got := map[string]string{}
	for _, ch := range c.Changes {
		got[ch.Model] = ch.Verdict + "|" + ch.Status
	}
	want := map[string]string{"a": VerdictRegressed + "|SUCCESS -> FAILURE", "b": VerdictSame + "|", "c": VerdictRegressed + "|SUCCESS -> FAILURE"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	var re *results.RegressionError
	if err := c.Err(); !errors.As(err, &re) || !strings.Contains(err.Error(), "status SUCCESS -> FAILURE") {
		t.Fatalf("err %v", err)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, results.FormatTable, c); err != nil || !strings.Contains(buf.String(), "(SUCCESS -> FAILURE)") {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}

// The rows of two experiments' perf.csv files are matched by their variant, whatever their
// order.
func TestCompareExperimentsByVariant(t *testing.T) {
	base := table("model,metric,performance,benchctl_variant", "train,img/s,100,\"batch=1,nodes=1\"", "train,img/s,300,\"batch=1,nodes=3\"")
	newer := table("model,metric,performance,benchctl_variant", "train,img/s,200,\"batch=1,nodes=3\"", "train,img/s,100,\"batch=1,nodes=1\"")
	got := map[string]string{}
	for _, ch := range Compare(base, newer, CompareOptions{Threshold: 5}).Changes {
		got[ch.Key] = ch.Verdict
	}
	want := map[string]string{"benchctl_variant=batch=1,nodes=1": VerdictSame, "benchctl_variant=batch=1,nodes=3": VerdictRegressed}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

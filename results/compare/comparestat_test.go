package compare

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// side is a perf.csv of one row per metric with the trials' values.
func side(metric string, trials ...[]float64) CompareSource {
	rows := []string{"model,metric,performance,benchctl_variant"}
	var tr [][]float64
	for i, t := range trials {
		s := append([]float64(nil), t...)
		rows = append(rows, "m,"+metric+","+stats.FormatStat(median(s))+",v="+string(rune('a'+i)))
		tr = append(tr, t)
	}
	return CompareSource{Table: table(rows...), Trials: tr}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return stats.MedianOfSorted(s)
}

func TestCompareOverTrials(t *testing.T) {
	base := []float64{100, 101, 99, 100.5, 99.5}
	cases := []struct {
		name, metric string
		new          []float64
		tol          float64
		want         string
	}{
		{"10 % slower", "samples_per_second", []float64{90, 91, 89, 90.5, 89.5}, 5, VerdictRegressed},
		{"10 % faster", "samples_per_second", []float64{110, 111, 109, 110.5, 109.5}, 5, VerdictImproved},
		{"only noisier", "samples_per_second", []float64{92, 108, 100, 96, 104}, 10, VerdictSame},
		{"the same", "samples_per_second", []float64{100.2, 99.8, 100.1, 99.9, 100}, 5, VerdictSame},
		{"on the edge of the tolerance", "samples_per_second", []float64{96, 96.5, 94, 93.5, 95.6}, 5, VerdictInconclusive},
		{"a latency 10 % up (guessed lower)", "latency_ms", []float64{110, 111, 109, 110.5, 109.5}, 5, VerdictRegressed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmp := CompareSources(side(c.metric, base), side(c.metric, c.new), CompareOptions{Threshold: c.tol})
			ch := cmp.Changes[0]
			if ch.Verdict != c.want || ch.Method != "rank test" || ch.BaseTrials != 5 || ch.NewTrials != 5 || ch.P == nil {
				t.Fatalf("%+v (p %v, interval %v to %v), want %s", ch, deref(ch.P), deref(ch.Low), deref(ch.High), c.want)
			}
			if c.want == VerdictInconclusive && ch.MoreTrials <= 0 {
				t.Errorf("inconclusive without an estimate of the trials needed: %+v", ch)
			}
			if c.metric == "latency_ms" && (!ch.Guessed || ch.Direction != results.LowerIsBetter) {
				t.Errorf("direction %s guessed %v", ch.Direction, ch.Guessed)
			}
			if (c.want == VerdictRegressed) != (cmp.Err() != nil) {
				t.Errorf("Err %v for %s", cmp.Err(), c.want)
			}
		})
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// A rule of the manifest decides direction and tolerance; a single value a side is the
// threshold rule, said so.
func TestCompareRulesAndSingleTrials(t *testing.T) {
	tol := 20.0
	rules := []manifest.MetricRule{{Metric: "*_ms", Better: manifest.BetterLower}, {Metric: "tps", Tolerance: &tol}}
	cmp := CompareSources(side("tps", []float64{100}), side("tps", []float64{85}), CompareOptions{Threshold: 5, Rules: rules})
	if ch := cmp.Changes[0]; ch.Verdict != VerdictSame || ch.Tolerance != 20 || ch.Method != "single-trial" {
		t.Errorf("tps: %+v", ch)
	}
	cmp = CompareSources(side("step_ms", []float64{100}), side("step_ms", []float64{90}), CompareOptions{Threshold: 5, Rules: rules})
	if ch := cmp.Changes[0]; ch.Verdict != VerdictImproved || ch.Guessed || ch.Direction != results.LowerIsBetter {
		t.Errorf("step_ms: %+v", ch)
	}
}

// The shown change never contradicts the verdict: -5.004 % beside a 5 % tolerance is shown
// with the digit that makes it a regression.
func TestFormatPercentKeepsTheSide(t *testing.T) {
	for _, c := range []struct {
		pct, tol float64
		want     string
	}{{-5.004, 5, "-5.004%"}, {-4.996, 5, "-4.996%"}, {-5, 5, "-5.00%"}, {12.3456, 5, "+12.35%"}, {-4.9999999, 5, "-4.9999999%"}} {
		if got := FormatPercent(c.pct, c.tol); got != c.want {
			t.Errorf("formatPercent(%v, %v) = %s, want %s", c.pct, c.tol, got, c.want)
		}
	}
	cmp := Compare(table("model,metric,performance", "a,x,100"), table("model,metric,performance", "a,x,94.996"), CompareOptions{Threshold: 5, Direction: results.HigherIsBetter})
	var b strings.Builder
	if err := WriteComparison(&b, results.FormatTable, cmp); err != nil || !strings.Contains(b.String(), "-5.004%") || !strings.Contains(b.String(), VerdictRegressed) {
		t.Errorf("%v\n%s", err, b.String())
	}
}

// Nothing joined is an error (exit 4) that says on what and what each side has: a
// madengine perf.csv against a benchchctl one must not pass a gate by matching nothing.
func TestCompareNothingJoined(t *testing.T) {
	mad := table("model,performance,metric,batch_size", "pyt_train_llama,1500,tokens_per_second,32")
	ours := table("model,performance,metric", "train,1490,samples_per_second")
	cmp := CompareSources(CompareSource{Table: mad, Name: "madengine.csv"}, CompareSource{Table: ours, Name: "perf.csv"}, CompareOptions{Threshold: 5})
	err := cmp.Err()
	var ie *results.InputError
	if !errors.As(err, &ie) || exitcode.Of(err) != exitcode.Invalid ||
		!strings.Contains(err.Error(), "no row of perf.csv matches a row of madengine.csv on model, metric") ||
		!strings.Contains(err.Error(), "pyt_train_llama tokens_per_second") || !strings.Contains(err.Error(), "train samples_per_second") ||
		!strings.Contains(err.Error(), "only madengine.csv has the key columns batch_size") {
		t.Errorf("%v", err)
	}
}

// Trials near float64's limits: no NaN or ±Inf reaches a change (compare -o json wrote
// none, and the table said ++Inf%), no estimate of 9223372036854775803 more trials; the
// rank test still judges the direction.
func TestCompareTrialsNearTheFloatLimits(t *testing.T) {
	const big = 1.7e308
	for _, c := range []struct {
		name      string
		base, new []float64
		want      string
	}{
		{"from the top to the bottom", []float64{big, big * 0.99, big * 0.98, big * 0.97, big * 0.96}, []float64{-big, -big * 0.99, -big * 0.98, -big * 0.97, -big * 0.96}, VerdictRegressed},
		{"from the bottom to the top", []float64{-big, -big * 0.99, -big * 0.98, -big * 0.97, -big * 0.96}, []float64{big, big * 0.99, big * 0.98, big * 0.97, big * 0.96}, VerdictImproved},
		{"a median of nearly 0", []float64{-1e-320, 0, 5e-324, 1e-320, 2e-320}, []float64{1e300, 2e300, 3e300, 4e300, 5e300}, VerdictImproved},
		{"mixed", []float64{big, -big, big, -big, 1}, []float64{-big, big, -big, big, 2}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmp := CompareSources(side("samples_per_second", c.base), side("samples_per_second", c.new), CompareOptions{Threshold: 5})
			ch := cmp.Changes[0]
			if c.want != "" && ch.Verdict != c.want {
				t.Errorf("verdict %s, want %s: %+v", ch.Verdict, c.want, ch)
			}
			for _, p := range []*float64{ch.Percent, ch.Low, ch.High, ch.P} {
				if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
					t.Errorf("a non-finite figure: %+v", ch)
				}
			}
			if ch.MoreTrials < 0 || ch.MoreTrials > 1e6 {
				t.Errorf("more trials: %d", ch.MoreTrials)
			}
			var out strings.Builder
			for _, f := range []string{results.FormatJSON, results.FormatTable, results.FormatCSV, results.FormatMarkdown} {
				out.Reset()
				if err := WriteComparison(&out, f, cmp); err != nil || strings.Contains(out.String(), "Inf") || strings.Contains(out.String(), "NaN") {
					t.Errorf("%s: %v\n%s", f, err, out.String())
				}
			}
		})
	}
}

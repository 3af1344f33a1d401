package stats

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestStats(t *testing.T) {
	cases := []struct {
		name              string
		raw               []string
		min, max          string
		mean, median, std float64
	}{
		{"one node", []string{"5"}, "5", "5", 5, 5, 0},
		{"odd", []string{"3", "1.0", "2"}, "1.0", "3", 2, 2, 1},
		{"even", []string{"4", "1", "3", "2"}, "1", "4", 2.5, 2.5, math.Sqrt(5.0 / 3)},
		{"kept as written", []string{"007", " 9.50 "}, "007", "9.50", 8.25, 8.25, math.Sqrt(3.125)},
		{"large values do not overflow", []string{"1e308", "1e308"}, "1e308", "1e308", 1e308, 1e308, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var a Accumulator
			for i, r := range c.raw {
				v, ok := ParsePerformance(r)
				if !ok {
					t.Fatalf("%q", r)
				}
				a.Add(i, v, r)
			}
			s := a.Stats()
			if s.Nodes != len(c.raw) || s.Min != c.min || s.Max != c.max || !near(s.Mean, c.mean) || !near(s.Median, c.median) || !near(s.Stdev, c.std) {
				t.Fatalf("got %+v", s)
			}
			if s.Mean != 0 && !near(s.CV, s.Stdev/s.Mean) {
				t.Fatalf("cv %v", s.CV)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The result must not depend on the order in which worker goroutines deliver the nodes.
func TestStatsIndependentOfOrder(t *testing.T) {
	vals := make([]float64, 1001)
	for i := range vals {
		vals[i] = 1000 + rand.Float64()*0.1
	}
	var a, b Accumulator
	for i, v := range vals {
		a.Add(i, v, "")
	}
	for _, i := range rand.Perm(len(vals)) {
		b.Add(i, vals[i], "")
	}
	if sa, sb := a.Stats(), b.Stats(); !reflect.DeepEqual(sa, sb) {
		t.Fatalf("order changed the stats:\n%+v\n%+v", sa.Mean, sb.Mean)
	}
}

func TestParsePerformance(t *testing.T) {
	for in, ok := range map[string]bool{"1.5": true, " 7 ": true, "1e3": true, "-2": true, "": false, "N/A": false, "NaN": false, "Inf": false, "1,5": false} {
		if _, got := ParsePerformance(in); got != ok {
			t.Errorf("parsePerformance(%q) ok = %v", in, got)
		}
	}
}

func TestFormatStat(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 14164.3333: "14164.3", 99.25: "99.25", 0.0178113: "0.0178113", 123456789.4: "123456789",
		-2.5: "-2.5", 1e-9: "1e-09", 7: "7", 1.0 / 3: "0.333333"} {
		if got := FormatStat(in); got != want {
			t.Errorf("FormatStat(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestStatsNearFloatLimits(t *testing.T) {
	a := &Accumulator{}
	a.Add(0, 1e308, "1e308")
	a.Add(1, 1.7e308, "1.7e308")
	st := a.Stats()
	if math.Abs(st.Mean-1.35e308) > 1e293 || math.Abs(st.Stdev-4.9497474683058e307) > 1e294 || st.CV == 0 {
		t.Fatalf("%+v", st)
	}
}

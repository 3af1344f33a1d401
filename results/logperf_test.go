package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseLogPerformance(t *testing.T) {
	cases := []struct {
		name  string
		log   string
		found bool
		want  LogResult
	}{
		{"unit glued, comma", "x\nperformance: 14164/s, samples_per_second\n", true, LogResult{Value: "14164", Unit: "/s", Metric: "samples_per_second", Line: 2}},
		{"space before metric", "performance: 1234.5 samples_per_second", true, LogResult{Value: "1234.5", Metric: "samples_per_second", Line: 1}},
		{"value as written", "performance: 007.50 tokens_per_second\n", true, LogResult{Value: "007.50", Metric: "tokens_per_second", Line: 1}},
		{"exponent and unit", "[rank0] performance: 1.5e3GB/s, busbw\n", true, LogResult{Value: "1.5e3", Unit: "GB/s", Metric: "busbw", Line: 1}},
		{"no metric: the unit is the metric", "performance: 42 \n", true, LogResult{Value: "42", Line: 1}},
		{"unit only", "performance: 9ms\n", true, LogResult{Value: "9", Unit: "ms", Metric: "ms", Line: 1}},
		{"last match wins", "performance: 1 a\nnoise\nperformance: 2 b\nperformance: oops\n", true, LogResult{Value: "2", Metric: "b", Line: 3}},
		{"case-sensitive, as madengine", "Performance: 3 x\n", false, LogResult{}},
		{"none", "hello\nworld\n", false, LogResult{}},
		{"empty", "", false, LogResult{}},
		{"thousands separator is ambiguous", "performance: 1,234 samples_per_second\n", true, LogResult{Value: "1", Metric: "234", Line: 1, Ambiguous: "1,234"}},
		{"decimal comma is ambiguous", "performance: 12,5 tokens_per_second\n", true, LogResult{Value: "12", Metric: "5", Line: 1, Ambiguous: "12,5"}},
		{"comma then metric is fine", "performance: 12, tokens\n", true, LogResult{Value: "12", Metric: "tokens", Line: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.log")
			os.WriteFile(path, []byte(c.log), 0o644)
			got, found, err := ParseLogPerformance(path)
			if err != nil || found != c.found || got != c.want {
				t.Fatalf("got %+v %v %v, want %+v %v", got, found, err, c.want, c.found)
			}
		})
	}
}

func TestParseLogPerformanceLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.log")
	long := strings.Repeat("z", 300<<10) // longer than the reader's buffer
	os.WriteFile(path, []byte(long+"\nperformance: 5 x\n"+long+"\n"), 0o644)
	got, found, err := ParseLogPerformance(path)
	if err != nil || !found || got.Value != "5" || got.Line != 2 {
		t.Fatalf("got %+v %v %v", got, found, err)
	}
	// A performance line cut by the reader's buffer boundary is still read whole.
	for _, pad := range []int{64<<10 - 15, 64<<10 - 20, 64<<10 - 25, 64<<10 - 13, 64<<10 - 1, 64 << 10} {
		os.WriteFile(path, []byte(strings.Repeat("x", pad)+"performance: 1234 samples_per_second\nend\n"), 0o644)
		got, found, err := ParseLogPerformance(path)
		if err != nil || !found || got.Value != "1234" || got.Metric != "samples_per_second" || got.Line != 1 {
			t.Fatalf("pad %d: got %+v %v %v", pad, got, found, err)
		}
	}
	if _, _, err := ParseLogPerformance(filepath.Join(t.TempDir(), "none.log")); !os.IsNotExist(err) {
		t.Fatalf("a missing log: %v", err)
	}
}

func TestLogTableIsUTF8(t *testing.T) {
	tab := logTable("b", LogResult{Value: "12", Unit: "\xb5s", Metric: "lat\xff"})
	for _, v := range tab.Rows[0] {
		if !utf8.ValidString(v) {
			t.Fatalf("%q is not UTF-8", v)
		}
	}
}

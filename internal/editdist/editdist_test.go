package editdist

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"gpus", "gpus", 0},
		{"gpus", "gups", 1},                                                            // a swap is one
		{"nodes", "ndoes", 1},                                                          // a swap is one
		{"kitten", "sitting", 3},                                                       // substitutions and an insertion
		{"results", "reslts", 1},                                                       // a deletion
		{"ca", "abc", 3},                                                               // optimal string alignment: no edit of a swapped pair
		{"wärme", "warme", 1},                                                          // runes, not bytes
		{"日本語", "日本", 1},                                                               // runes, not bytes
		{"timeout", "tiemout", 1},                                                      // a swap inside
		{"benchmarks", "benchmark", 1},                                                 // a plural
		{"manfest", "manifest", 1}, {"buidler", "builder", 1}, {"outptu", "output", 1}, // the flags' hints
	} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
		if got := Distance(c.b, c.a); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.d)
		}
	}
	// A long input costs rows, not a square: a 6,000-rune line against a field name.
	if d := Distance(strings.Repeat("x", 6000), "timeout"); d != 6000 {
		t.Errorf("long: %d", d)
	}
}

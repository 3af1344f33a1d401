package main

import (
	"testing"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4096", 4096, true}, {"512K", 512 << 10, true}, {"64M", 64 << 20, true}, {"64MiB", 64 << 20, true},
		{"1G", 1 << 30, true}, {"1gb", 1 << 30, true}, {" 2T ", 2 << 40, true}, {"8 M", 8 << 20, true}, {"100B", 100, true},
		{"", 0, false}, {"M", 0, false}, {"1.5G", 0, false}, {"-1M", 0, false}, {"64X", 0, false}, {"64MM", 0, false},
		{"99999999999999999999", 0, false}, {"9999999999T", 0, false},
	}
	for _, tc := range cases {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, n := range []int64{4, 1000, 8 << 20, 3 << 30} {
		if got, err := parseSize(formatSize(n)); err != nil || got != n {
			t.Errorf("parseSize(formatSize(%d)) = %d, %v", n, got, err)
		}
	}
}

func TestChunk(t *testing.T) {
	for _, tc := range []struct{ length, n int }{{0, 3}, {2, 3}, {10, 3}, {12, 4}, {7, 1}, {1 << 20, 5}} {
		next := 0
		for c := range tc.n {
			lo, hi := chunk(tc.length, tc.n, c)
			if lo != next || hi < lo || hi-lo > tc.length/tc.n+1 {
				t.Errorf("chunk(%d, %d, %d) = [%d, %d), want it to start at %d and be balanced", tc.length, tc.n, c, lo, hi, next)
			}
			next = hi
		}
		if next != tc.length {
			t.Errorf("chunks of %d split %d ways end at %d", tc.length, tc.n, next)
		}
	}
}

// Package timing holds what the benchmark programs under bench/ share: timing a call, the
// median of repetitions, and failing at once on a setup error.
package timing

import (
	"log"
	"slices"
	"time"
)

// Time runs fn and returns how long it took.
func Time(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// Median is the middle of the repetitions (the upper middle for an even count).
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Check stops the program on a setup error: a benchmark that cannot set up has no figure.
func Check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

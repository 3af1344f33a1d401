package main

import (
	"fmt"
	"sync"
	"time"
)

// parallelFor runs f on threads contiguous parts [lo, hi) of [0, n), concurrently.
func parallelFor(n, threads int, f func(lo, hi int)) {
	var wg sync.WaitGroup
	for t := range threads {
		lo, hi := t*n/threads, (t+1)*n/threads
		if lo < hi {
			wg.Go(func() { f(lo, hi) })
		}
	}
	wg.Wait()
}

// fillStream sets b[i] = i%7 and c[i] = i%3 (small integers, so the triad is exact) and
// a[i] = 0, touching every page from the goroutine that will later work on it.
func fillStream(a, b, c []float64, threads int) {
	parallelFor(len(a), threads, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i], b[i], c[i] = 0, float64(i%7), float64(i%3)
		}
	})
}

// triad is the STREAM triad a[i] = b[i] + s*c[i].
func triad(a, b, c []float64, s float64, threads int) {
	parallelFor(len(a), threads, func(lo, hi int) {
		a, b, c := a[lo:hi], b[lo:hi], c[lo:hi]
		b, c = b[:len(a)], c[:len(a)]
		for i := range a {
			a[i] = b[i] + s*c[i]
		}
	})
}

// copyKernel is the STREAM copy dst[i] = src[i], done with the built-in copy (memmove).
func copyKernel(dst, src []float64, threads int) {
	parallelFor(len(dst), threads, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// checkTriad checks every element of a triad result.
func checkTriad(a, b, c []float64, s float64) error {
	for i := range a {
		if want := b[i] + s*c[i]; a[i] != want {
			return fmt.Errorf("triad result is wrong at a[%d]: got %g, want %g", i, a[i], want)
		}
	}
	return nil
}

// checkCopy checks every element of a copy.
func checkCopy(dst, src []float64) error {
	for i := range dst {
		if dst[i] != src[i] {
			return fmt.Errorf("copy result is wrong at [%d]: got %g, want %g", i, dst[i], src[i])
		}
	}
	return nil
}

// bestOf runs f reps times, calling before (untimed) ahead of each run, and returns the
// shortest time f took.
func bestOf(reps int, before, f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range reps {
		before()
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

package main

import (
	"fmt"
	"time"

	"github.com/benchctl/benchctl/models/internal/example"
)

// fill sets rank's contribution: element i is (rank+1) + i%7, small integers whose sum
// over the ranks is exact in float32.
func fill(v []float32, rank int) {
	for i := range v {
		v[i] = float32(rank + 1 + i%7)
	}
}

// expected is element i of the sum over n ranks.
func expected(i, n int) float32 { return float32(n*(n+1)/2 + n*(i%7)) }

// check returns the first element of v that is not the sum over n ranks, or -1.
func check(v []float32, n int) int {
	for i, x := range v {
		if x != expected(i, n) {
			return i
		}
	}
	return -1
}

// measure runs the warm-up and timed iterations and returns the mean time of the timed
// ones. Each iteration refills the vector, waits for every rank (untimed), all-reduces it
// (or, with no ring, copies it) and checks the result.
func measure(g *ring, e example.NodeEnv, o options, logf logFunc) (time.Duration, error) {
	v := make([]float32, o.size/4)
	var src []float32 // single rank: what is copied into v
	if g == nil {
		src = make([]float32, len(v))
		fill(src, 0)
	}
	var total time.Duration
	for it := range o.warmup + o.iters {
		kind, n := "warm-up", it+1
		if it >= o.warmup {
			kind, n = "timed", it-o.warmup+1
		}
		var d time.Duration
		if g == nil {
			clear(v)
			start := time.Now()
			copy(v, src)
			d = time.Since(start)
		} else {
			fill(v, e.Rank)
			if err := g.barrier(); err != nil {
				return 0, fmt.Errorf("%s iteration %d: barrier: %w", kind, n, err)
			}
			start := time.Now()
			err := g.allReduce(v)
			d = time.Since(start)
			if err != nil {
				return 0, fmt.Errorf("%s iteration %d: %w", kind, n, err)
			}
		}
		if i := check(v, e.NNodes); i >= 0 {
			return 0, fmt.Errorf("%s iteration %d: wrong sum at element %d: got %g, want %g", kind, n, i, v[i], expected(i, e.NNodes))
		}
		logf("%s iteration %d: %.3f ms, %.3f GB/s algbw", kind, n, d.Seconds()*1e3, float64(o.size)/max(d, time.Nanosecond).Seconds()/1e9)
		if it >= o.warmup {
			total += d
		}
	}
	return max(total/time.Duration(o.iters), time.Nanosecond), nil
}

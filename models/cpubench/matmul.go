package main

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// fillMatrix fills m with deterministic values in [-0.5, 0.5), different for each seed.
func fillMatrix(m []float64, seed int) {
	for i := range m {
		m[i] = float64((i*37+seed*11)%101)/101 - 0.5
	}
}

// matmul adds a*b to c, for row-major n×n matrices, using threads goroutines. It is
// cache-tiled: each goroutine takes a panel of rows of c at a time and walks a and b in
// block×block tiles, in i-k-j order so the innermost loop streams along rows.
func matmul(c, a, b []float64, n, block, threads int) {
	panel := block
	if tasks := (n + panel - 1) / panel; tasks < 4*threads {
		panel = max(1, n/(4*threads)) // enough panels to keep every goroutine busy
	}
	var next atomic.Int64 // the first row of the next panel to take
	var wg sync.WaitGroup
	for range threads {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(panel))) - panel
				if lo >= n {
					return
				}
				matmulPanel(c, a, b, n, block, lo, min(lo+panel, n))
			}
		})
	}
	wg.Wait()
}

// matmulPanel computes rows [lo, hi) of c += a*b.
func matmulPanel(c, a, b []float64, n, block, lo, hi int) {
	for k0 := 0; k0 < n; k0 += block {
		k1 := min(k0+block, n)
		for j0 := 0; j0 < n; j0 += block {
			j1 := min(j0+block, n)
			for i := lo; i < hi; i++ {
				ci := c[i*n+j0 : i*n+j1]
				for k, aik := range a[i*n+k0 : i*n+k1] {
					bk := b[(k0+k)*n+j0 : (k0+k)*n+j1]
					bk = bk[:len(ci)] // lets the compiler drop the bounds checks below
					for j, bkj := range bk {
						ci[j] += aik * bkj
					}
				}
			}
		}
	}
}

// checkMatmul compares c = a*b with a naive dot product on two m×m sub-blocks of c (the
// top-left and the bottom-right corners, so the edge tiles are covered too).
func checkMatmul(c, a, b []float64, n, m int) error {
	m = min(m, n)
	for _, corner := range []int{0, n - m} {
		for i := corner; i < corner+m; i++ {
			for j := corner; j < corner+m; j++ {
				var want, scale float64
				for k := range n {
					want += a[i*n+k] * b[k*n+j]
					scale += math.Abs(a[i*n+k] * b[k*n+j])
				}
				if got := c[i*n+j]; math.Abs(got-want) > 1e-12*max(scale, 1) {
					return fmt.Errorf("matmul result is wrong at C[%d][%d]: got %g, want %g", i, j, got, want)
				}
			}
		}
	}
	return nil
}

package main

import (
	"context"
	"runtime"
	"time"

	"github.com/benchctl/benchctl/results/collect"
)

// figures are one collect's cost.
type figures struct {
	Nodes      int
	Wall       time.Duration
	Allocated  uint64 // bytes allocated during the collect (garbage included)
	PeakStream uint64 // largest live heap seen while node folders streamed in, above the baseline (sampled)
	Retained   uint64 // live heap after the collect, above the baseline: the Summary and perf.csv
}

// collectOnce collects a job once. With sampleEvery > 0, the live heap is measured (after
// a GC) every sampleEvery nodes while the folders stream in; that slows the run, so timings
// are taken without it.
func collectOnce(shared, job string, sampleEvery int) (figures, *collect.Collection, error) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, allocBase := ms.HeapInuse, ms.TotalAlloc
	var f figures
	opts := collect.CollectOptions{SharedDir: shared, JobID: job, Attempt: -1}
	if sampleEvery > 0 {
		opts.Aggregate.Progress = func(n int) {
			if n%sampleEvery == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > base {
					f.PeakStream = max(f.PeakStream, ms.HeapInuse-base)
				}
			}
		}
	}
	start := time.Now()
	col, err := collect.Collect(context.Background(), opts)
	f.Wall = time.Since(start)
	if err != nil {
		return f, nil, err
	}
	runtime.ReadMemStats(&ms)
	f.Allocated = ms.TotalAlloc - allocBase
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > base {
		f.Retained = ms.HeapInuse - base
	}
	f.Nodes = col.Summary.Nodes.Expected
	runtime.KeepAlive(col)
	return f, col, nil
}

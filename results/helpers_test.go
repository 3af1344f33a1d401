package results

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// fixedNow stamps summaries so that golden files do not change.
func fixedNow() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }

// heapGuard is heapPeak that also stops the test binary when the heap in use passes limit,
// so that a regression fails the test instead of taking the machine's memory.
func heapGuard(limit uint64) func() uint64 {
	var peak atomic.Uint64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			if m.HeapInuse > limit {
				panic(fmt.Sprintf("heap in use %d MiB, over %d MiB: stopped before it takes the machine's memory", m.HeapInuse>>20, limit>>20))
			}
			select {
			case <-quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(quit); <-done; return peak.Load() }
}

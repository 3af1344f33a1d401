package results

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// fixedNow stamps summaries so that golden files do not change.
func fixedNow() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }

// sharedCopy copies testdata/shared into a temp dir: collect writes into job folders.
func sharedCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "shared")
	if err := os.CopyFS(dst, os.DirFS("testdata/shared")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// writeNodeBenches writes a successful node folder with benchmarks b0, b1, ... and the same
// CSV for each.
func writeNodeBenches(t *testing.T, job string, rank int, host string, benches int, csv string) {
	t.Helper()
	nd := jobdirtest.At(job).Node(rank, host)
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &jobdir.Status{Version: 1, Rank: rank, Host: host, Outcome: jobdir.OutcomeSuccess, FinishedAt: &end}
	for i := range benches {
		name := fmt.Sprintf("b%d", i)
		st.Benchmarks = append(st.Benchmarks, jobdir.BenchmarkStatus{Name: name, Outcome: jobdir.OutcomeSuccess, DurationSeconds: 1})
		jobdirtest.Result(t, nd, name, "b.csv", []byte(csv))
	}
	jobdirtest.Status(t, nd, st)
}

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

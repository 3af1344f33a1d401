package jobchan

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBarrier measures, on loopback, how long rank 0 takes to release every worker
// once the last one has arrived (ms/release), and the memory the barrier holds per rank
// (both sides, as they all live in this process: B/rank).
//
//	go test ./jobchan -run '^$' -bench Barrier -benchtime 5x
func BenchmarkBarrier(b *testing.B) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	for _, world := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("ranks=%d", world), func(b *testing.B) {
			if uint64(2*world+64) > lim.Cur {
				b.Skipf("needs %d open files, the limit is %d", 2*world+64, lim.Cur)
			}
			benchBarrier(b, world)
		})
	}
}

func benchBarrier(b *testing.B, world int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := testConfig(world, nil)
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.LogEvery = time.Hour
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l, err := Listen(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	workers := make([]*Worker, world-1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for r := 1; r < world; r++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c := cfg
			c.Rank = r
			w, err := Join(ctx, c, func() string { return l.Addr })
			if err != nil {
				b.Error(err)
				return
			}
			workers[r-1] = w
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	defer func() {
		for _, w := range workers {
			w.Close()
		}
	}()
	runtime.GC()
	runtime.ReadMemStats(&after)
	perRank := float64((after.HeapInuse+after.StackInuse)-(before.HeapInuse+before.StackInuse)) / float64(world)

	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		phase := fmt.Sprintf("p%d", i)
		var done sync.WaitGroup
		for _, w := range workers {
			done.Add(1)
			go func() {
				defer done.Done()
				if _, err := w.Wait(ctx, phase); err != nil {
					b.Error(err)
				}
			}()
		}
		for { // until the leader has seen every arrival
			l.mu.Lock()
			n := len(l.arrived[phase])
			l.mu.Unlock()
			if n == world-1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		if err := l.Release(ctx, phase, map[string]string{"imageId": "sha256:0123456789abcdef"}); err != nil {
			b.Fatal(err)
		}
		done.Wait()
		total += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/release")
	b.ReportMetric(perRank, "B/rank")
}

package jobchan

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
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
	limit := raiseFileLimit()
	for _, world := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("ranks=%d", world), func(b *testing.B) {
			if uint64(2*world+64) > limit {
				b.Skipf("needs %d open files, the limit is %d", 2*world+64, limit)
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
	workers := joinAll(b, ctx, cfg, l.Addr)
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

// joinAll joins ranks 1..World-1 to the leader at addr, 64 at a time.
func joinAll(b *testing.B, ctx context.Context, cfg Config, addr string) []*Worker {
	workers := make([]*Worker, cfg.World-1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for r := 1; r < cfg.World; r++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c := cfg
			c.Rank = r
			w, err := Join(ctx, c, func() string { return addr })
			if err != nil {
				b.Error(err)
				return
			}
			workers[r-1] = w
		}()
	}
	wg.Wait()
	return workers
}

func raiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}

// BenchmarkAbortFanout measures, on loopback, the time from rank 0's Abort to the last
// worker's Done (ms/abort): how fast a failure reaches every node.
//
//	go test ./jobchan -run '^$' -bench AbortFanout -benchtime 5x
func BenchmarkAbortFanout(b *testing.B) {
	limit := raiseFileLimit()
	for _, world := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("ranks=%d", world), func(b *testing.B) {
			if uint64(2*world+64) > limit {
				b.Skipf("needs %d open files, the limit is %d", 2*world+64, limit)
			}
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				cfg := testConfig(world, nil)
				cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
				cfg.LogEvery = time.Hour
				l, err := Listen(cfg)
				if err != nil {
					b.Fatal(err)
				}
				workers := joinAll(b, ctx, cfg, l.Addr)
				if b.Failed() {
					cancel()
					return
				}
				b.StartTimer()
				start := time.Now()
				l.Abort("rank 2 (n3) failed benchmark b: exited with code 1", 3)
				for _, w := range workers {
					<-w.Done()
				}
				total += time.Since(start)
				b.StopTimer()
				for _, w := range workers {
					w.Close()
				}
				l.Close()
				cancel()
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/abort")
		})
	}
}

// BenchmarkHeartbeatCost measures the CPU rank 0 spends on heartbeats with 4,095 workers
// connected: the workers run in a child process (this test binary), heartbeats go both ways
// every second, and rank 0's CPU time (user+system, getrusage) over 20 rounds gives the cost
// of one round; %core@5s is that cost at the default period of 5 s.
//
//	go test ./jobchan -run '^$' -bench HeartbeatCost -benchtime 1x
func BenchmarkHeartbeatCost(b *testing.B) {
	const world = 4096
	const period = time.Second // shorter ones, on 2 cores busy with both sides, make joined workers look lost
	if limit := raiseFileLimit(); limit < world+64 {
		b.Skipf("needs %d open files, the limit is %d", world+64, limit)
	}
	cfg := testConfig(world, nil)
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.LogEvery, cfg.Heartbeat = time.Hour, period
	l, err := Listen(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	child := exec.Command(os.Args[0], "-test.run=^TestHeartbeatWorkersHelper$")
	child.Env = append(os.Environ(), "JOBCHAN_HELPER_LEADER="+l.Addr, "JOBCHAN_HELPER_WORLD="+strconv.Itoa(world), "JOBCHAN_HELPER_HEARTBEAT="+period.String())
	stdin, err := child.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = child.Wait() }()
	deadline := time.Now().Add(3 * time.Minute)
	for len(l.Connected()) < world-1 {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d workers joined", len(l.Connected()), world-1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	b.ResetTimer()
	const rounds = 20
	var perRound time.Duration
	for i := 0; i < b.N; i++ {
		before := cpuTime()
		time.Sleep(rounds * period)
		perRound += (cpuTime() - before) / rounds
	}
	perRound /= time.Duration(b.N)
	if l.Err() != nil {
		b.Fatalf("the job was aborted while measuring: %v", l.Err())
	}
	b.ReportMetric(float64(perRound.Microseconds())/1000, "ms-cpu/round")
	b.ReportMetric(100*perRound.Seconds()/DefaultHeartbeat.Seconds(), "%core@5s")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHeartbeatWorkersHelper is BenchmarkHeartbeatCost's child process: it joins the
// workers of a job to the leader named in its environment and keeps them until its
// standard input closes. Run on its own it does nothing.
func TestHeartbeatWorkersHelper(t *testing.T) {
	addr := os.Getenv("JOBCHAN_HELPER_LEADER")
	if addr == "" {
		return
	}
	world, _ := strconv.Atoi(os.Getenv("JOBCHAN_HELPER_WORLD"))
	period, _ := time.ParseDuration(os.Getenv("JOBCHAN_HELPER_HEARTBEAT"))
	raiseFileLimit()
	cfg := testConfig(world, nil)
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.LogEvery, cfg.Heartbeat = time.Hour, period
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	workers := make([]*Worker, 0, world-1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for r := 1; r < world; r++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c := cfg
			c.Rank = r
			w, err := Join(ctx, c, func() string { return addr })
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			workers = append(workers, w)
			mu.Unlock()
		}()
	}
	wg.Wait()
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, w := range workers {
		w.Close()
	}
}

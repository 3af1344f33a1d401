package jobchan

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
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
	l, ws := joinTree(b, ctx, cfg)
	defer l.Close()
	workers := ws[1:]
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
			if n == len(l.children) { // every worker, or every relay with its whole group
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
				l, ws := joinTree(b, ctx, cfg)
				workers := ws[1:]
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

// BenchmarkHeartbeatCost measures the CPU rank 0 spends on heartbeats in a job of 4,096
// ranks: the workers run in another process (loadworkers), as relayed groups of 64, so
// rank 0 exchanges heartbeats with 64 relays; each relay does the same with its group.
// Heartbeats go both ways every second; rank 0's CPU time (user+system, getrusage) over 20
// rounds gives the cost of one round, and %core@5s is that cost at the default period.
// fanout=4096 measures the flat alternative, every worker connected to rank 0.
//
//	go test ./jobchan -run '^$' -bench HeartbeatCost -benchtime 1x
func BenchmarkHeartbeatCost(b *testing.B) {
	const world = 4096
	const period = time.Second // shorter ones, on 2 cores busy with both sides, make workers look lost
	bin := buildLoadWorkers(b)
	if limit := raiseFileLimit(); limit < 2*world+512 {
		b.Skipf("needs %d open files, the limit is %d", 2*world+512, limit)
	}
	for _, fanOut := range []int{DefaultFanOut, world} {
		b.Run(fmt.Sprintf("fanout=%d", fanOut), func(b *testing.B) {
			cfg := testConfig(world, nil)
			cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
			cfg.LogEvery, cfg.Heartbeat, cfg.FanOut = time.Hour, period, fanOut
			l, err := Listen(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			out, stop := startLoadWorkers(b, bin, cfg, l.Addr, "-fanout", strconv.Itoa(fanOut))
			defer stop()
			if !out.Scan() || out.Text() != fmt.Sprintf("joined %d", world-1) {
				b.Fatalf("the workers say %q", out.Text())
			}
			time.Sleep(2 * period)
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
			b.ReportMetric(float64(len(l.Connected())), "conns")
			b.ReportMetric(float64(perRound.Microseconds())/1000, "ms-cpu/round")
			b.ReportMetric(100*perRound.Seconds()/DefaultHeartbeat.Seconds(), "%core@5s")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJobAtScale measures a whole job's channel with rank 0 in the test process and
// the workers in others (jobchan/internal/loadworkers: one, or as many as the open-file
// limit needs, each with whole groups), in relayed groups of 64, on loopback: join+release is from the workers' start (they wait for a word, so that the
// process's own start is not counted) until every worker has been released from a first
// barrier phase (every rank joined, arrived, rank 0 released); abort is from rank 0's
// Abort until every worker has it (Done). Both also report the CPU time (user+system) of
// every process of the job over the same span: on a machine other work shares, the wall
// clock shows the share this got, the CPU time what the job channel costs.
// JOBCHAN_LOAD_CPUPROFILE=file profiles the first workers' process (-cpuprofile, rank 0's).
//
//	go test ./jobchan -run '^$' -bench JobAtScale -benchtime 3x
func BenchmarkJobAtScale(b *testing.B) {
	bin := buildLoadWorkers(b)
	raiseFileLimit()
	for _, world := range []int{4096, 16384} {
		b.Run(fmt.Sprintf("ranks=%d", world), func(b *testing.B) {
			var sum scaleFigures
			for i := 0; i < b.N; i++ {
				f := jobAtScale(b, bin, world)
				sum.join += f.join
				sum.abort += f.abort
				sum.joinCPU += f.joinCPU
				sum.abortCPU += f.abortCPU
			}
			n := float64(b.N)
			b.ReportMetric(float64(sum.join.Microseconds())/1000/n, "ms/join+release")
			b.ReportMetric(float64(sum.abort.Microseconds())/1000/n, "ms/abort")
			b.ReportMetric(sum.joinCPU.Seconds()/n, "cpu-s/join+release")
			b.ReportMetric(float64(sum.abortCPU.Microseconds())/1000/n, "cpu-ms/abort")
		})
	}
}

// scaleFigures are one job's: wall-clock times, and the CPU time (user+system) of every
// process of the job (rank 0's and the workers') over the same spans.
type scaleFigures struct{ join, abort, joinCPU, abortCPU time.Duration }

func jobAtScale(b *testing.B, bin string, world int) (f scaleFigures) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := testConfig(world, nil)
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.LogEvery = time.Hour
	// Every simulated node's heartbeats land on this machine's cores (16,383 workers at the
	// default 5 s: 6,500 messages a second, most of a core), and the first round would
	// fall in the abort's measurement: a minute keeps them out (BenchmarkHeartbeatCost
	// measures them) unless JOBCHAN_SCALE_HEARTBEAT says otherwise.
	cfg.Heartbeat = time.Minute
	if h := os.Getenv("JOBCHAN_SCALE_HEARTBEAT"); h != "" {
		d, err := time.ParseDuration(h)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Heartbeat = d
	}
	l, err := Listen(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	parts := workerProcesses(world)
	type proc struct {
		out   *bufio.Scanner
		in    io.Writer
		pid   int
		count string
	}
	procs := make([]proc, parts)
	for i := range procs {
		args := []string{"-phase", "meet", "-go", "-abort", "-part", fmt.Sprintf("%d/%d", i, parts)}
		if c := os.Getenv("JOBCHAN_LOAD_CONCURRENCY"); c != "" {
			args = append(args, "-concurrency", c)
		}
		if p := os.Getenv("JOBCHAN_LOAD_CPUPROFILE"); p != "" && i == 0 { // a workers' process, profiled
			args = append(args, "-cpuprofile", p)
		}
		out, in, pid, stop := startLoadWorkersIO(b, bin, cfg, l.Addr, args...)
		defer stop()
		n := 0
		for r := 1; r < world; r++ {
			if cfg.group(r)%parts == i {
				n++
			}
		}
		procs[i] = proc{out, in, pid, strconv.Itoa(n)}
	}
	expect := func(what string) {
		for _, p := range procs {
			want := what + " " + p.count
			if what == "ready" {
				want = what
			}
			if !p.out.Scan() || p.out.Text() != want {
				b.Fatalf("the workers say %q, want %q", p.out.Text(), want)
			}
		}
	}
	expect("ready")
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx, "meet", map[string]string{"imageId": "sha256:0123456789abcdef"}) }()
	cpu := func() time.Duration {
		t := cpuTime()
		for _, p := range procs {
			t += procCPU(p.pid)
		}
		return t
	}
	cpu0 := cpu()
	start := time.Now()
	for _, p := range procs {
		if _, err := io.WriteString(p.in, "go\n"); err != nil {
			b.Fatal(err)
		}
	}
	expect("released")
	f.join = time.Since(start)
	f.joinCPU = cpu() - cpu0
	if err := <-released; err != nil {
		b.Fatal(err)
	}
	expect("joined")
	cpu0 = cpu()
	start = time.Now()
	l.Abort("rank 2 (n3) failed benchmark b: exited with code 1", 3)
	expect("aborted")
	f.abort = time.Since(start)
	f.abortCPU = cpu() - cpu0
	return f
}

// procCPU is a process's user+system time, from /proc (0 where there is none).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after the command's name
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks: USER_HZ is 100 on Linux
}

// workerProcesses is how many processes the workers of a job of world ranks need, by the
// open-file limit each may have (the hard limit, unless it can raise it): about two
// descriptors per worker (its connection, and its end at its relay).
func workerProcesses(world int) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1
	}
	probe := syscall.Rlimit{Cur: lim.Cur, Max: lim.Max + 1}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &probe) == nil { // root: the child raises its own
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		return 1
	}
	parts := 1
	for uint64(2*world/parts+1024) > lim.Max {
		parts++
	}
	return parts
}

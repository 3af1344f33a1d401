// Command loadworkers joins ranks 1..world-1 of a job to a job channel leader, all in this
// process, for jobchan's scale tests and benchmarks: rank 0 runs in the test process, the
// workers here, as on a cluster (with -part, a share of the relayed groups, each with its
// relay, in each of several processes). With -phase, every worker waits at that barrier phase and
// "released N" is printed once all N have been released. With -go, it prints "ready" and
// waits for a line "go" on its standard input before the first worker joins (so that a
// benchmark times the joins, not the process's start). With -abort, it prints "aborted N"
// once rank 0's abort has reached all N. It keeps the workers until its standard input
// closes, then closes them and prints "closed".
//
// The job secret comes from JOBCHAN_LOAD_SECRET (never a flag: secrets stay off command
// lines). Host names are n1..n<world>, as in jobchan's tests.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/benchctl/benchctl/jobchan"
)

func main() {
	leader := flag.String("leader", "", "rank 0's address (host:port)")
	world := flag.Int("world", 0, "ranks in the job, rank 0 included")
	job := flag.String("job", "42.0", "job id with attempt")
	heartbeat := flag.Duration("heartbeat", 0, "heartbeat period (0: the default)")
	fanOut := flag.Int("fanout", 0, "fan-out (0: the default)")
	phase := flag.String("phase", "", "barrier phase every worker waits at")
	wait := flag.Bool("go", false, `print "ready", then wait for a line "go" before joining`)
	abort := flag.Bool("abort", false, `print "aborted N" when rank 0's abort has reached every worker`)
	profile := flag.String("cpuprofile", "", "write a CPU profile of the joins, the phase and the abort to this file")
	concurrency := flag.Int("concurrency", 128, "workers joining at once")
	part := flag.String("part", "0/1", "i/n: run the relayed groups g with g mod n = i (a process may not open files enough for all)")
	flag.Parse()
	secret := os.Getenv("JOBCHAN_LOAD_SECRET")
	var i, n int
	if _, err := fmt.Sscanf(*part, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		log.Fatalf("loadworkers: -part %q: want i/n with 0 ≤ i < n", *part)
	}
	if *leader == "" || *world < 2 || secret == "" {
		log.Fatal("loadworkers: give -leader, -world ≥ 2 and JOBCHAN_LOAD_SECRET")
	}
	raiseFileLimit(uint64(2**world/n + 1024)) // a connection per worker, the relays' ends of their groups, listeners
	hosts := make([]string, *world)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("n%d", i+1)
	}
	var mu sync.Mutex
	addrs := map[int]string{0: *leader}
	cfg := jobchan.Config{Job: *job, World: *world, Hosts: hosts, Secret: []byte(secret), Master: "127.0.0.1", Ports: []int{0},
		Heartbeat: *heartbeat, FanOut: *fanOut, LogEvery: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AddrOf:  func(int) string { return "127.0.0.1" },
		Publish: func(rank int, addr string) { mu.Lock(); addrs[rank] = addr; mu.Unlock() }}
	hint := func(rank int) string { mu.Lock(); defer mu.Unlock(); return addrs[rank] }
	fanout := *fanOut
	if fanout == 0 {
		fanout = jobchan.DefaultFanOut
	}
	mine := func(r int) bool { return ((r-1)/fanout)%n == i } // a relay and its group live in one process
	if *world-1 <= fanout && n > 1 {
		log.Fatal("loadworkers: a job without relayed groups runs in one process (-part 0/1)")
	}
	count := 0
	for r := 1; r < *world; r++ {
		if mine(r) {
			count++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	in := bufio.NewReader(os.Stdin)
	if *wait {
		fmt.Println("ready")
		if line, err := in.ReadString('\n'); err != nil || line != "go\n" {
			log.Fatalf("loadworkers: expected go, read %q: %v", line, err)
		}
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	workers := make([]*jobchan.Worker, *world)
	var wg sync.WaitGroup
	join := func(r int, sem chan struct{}) {
		defer wg.Done()
		c := cfg
		c.Rank = r
		w, err := jobchan.Join(ctx, c, hint)
		<-sem
		if err != nil {
			log.Fatalf("loadworkers: rank %d: %v", r, err)
		}
		workers[r] = w
		if *phase != "" {
			if _, err := w.Wait(ctx, *phase); err != nil {
				log.Fatalf("loadworkers: rank %d: %v", r, err)
			}
		}
	}
	t0 := time.Now()
	// Relays first: their groups connect to them.
	sem := make(chan struct{}, *concurrency)
	for _, relays := range []bool{true, false} {
		var started sync.WaitGroup
		for r := 1; r < *world; r++ {
			if cfg.IsRelay(r) != relays || !mine(r) {
				continue
			}
			wg.Add(1)
			started.Add(1)
			sem <- struct{}{}
			go func() {
				started.Done()
				join(r, sem)
			}()
		}
		started.Wait()
		for len(sem) > 0 { // every relay has joined (its slot is back) before the members start
			time.Sleep(time.Millisecond)
		}
		if os.Getenv("LOADWORKERS_TIMINGS") != "" {
			log.Printf("relays %v: all started and joined after %v", relays, time.Since(t0))
		}
	}
	wg.Wait()
	if os.Getenv("LOADWORKERS_TIMINGS") != "" {
		log.Printf("all released after %v", time.Since(t0))
	}
	out := bufio.NewWriter(os.Stdout)
	if *phase != "" {
		fmt.Fprintf(out, "released %d\n", count)
	}
	fmt.Fprintf(out, "joined %d\n", count)
	out.Flush()
	if *abort {
		go func() {
			for _, w := range workers[1:] {
				if w != nil {
					<-w.Done()
				}
			}
			fmt.Printf("aborted %d\n", count)
		}()
	}
	_, _ = io.Copy(io.Discard, in)
	for _, w := range workers[1:] {
		if w != nil {
			w.Close()
		}
	}
	fmt.Println("closed")
}

// raiseFileLimit raises the open-file limit to need, or as far as the hard limit allows
// (further when run as root).
func raiseFileLimit(need uint64) {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil || lim.Cur >= need {
		return
	}
	if lim.Max < need {
		raised := syscall.Rlimit{Cur: need, Max: need}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			return
		}
	}
	lim.Cur = lim.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

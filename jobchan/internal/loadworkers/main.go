// Command loadworkers joins ranks 1..world-1 of a job to a job channel leader, all in this
// process, for jobchan's scale tests and benchmarks: rank 0 runs in the test process, the
// workers here, as on a cluster. With -phase, every worker waits at that barrier phase and
// "released N" is printed once all N have been released. It keeps the workers until its
// standard input closes, then closes them and prints "closed".
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
	flag.Parse()
	secret := os.Getenv("JOBCHAN_LOAD_SECRET")
	if *leader == "" || *world < 2 || secret == "" {
		log.Fatal("loadworkers: give -leader, -world ≥ 2 and JOBCHAN_LOAD_SECRET")
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

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
	// Relays first: their groups connect to them.
	sem := make(chan struct{}, 128)
	for _, relays := range []bool{true, false} {
		var started sync.WaitGroup
		for r := 1; r < *world; r++ {
			if cfg.IsRelay(r) != relays {
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
	}
	wg.Wait()
	out := bufio.NewWriter(os.Stdout)
	if *phase != "" {
		fmt.Fprintf(out, "released %d\n", *world-1)
	}
	fmt.Fprintf(out, "joined %d\n", *world-1)
	out.Flush()
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, w := range workers[1:] {
		w.Close()
	}
	fmt.Println("closed")
}

// Command fanout-bench measures the image fan-out (fanout.Send, fanout.Listen and
// Receive) on loopback, without engines: every rank is a goroutine group of this process,
// all on 127.0.0.1 sharing one port range, each receiver's sink discards what it reads at
// line rate (256 KiB reads). The image is generated as it is sent (an incompressible 1 MiB
// block, repeated), never held in memory. For each chain length it reports, as the median
// of the repetitions:
//
//   - time to the last byte: from the call to fanout.Send to the last sink reading its EOF
//     (the image verified), and that time ÷ the 2-rank time (one hop);
//   - per hop: (the last rank's EOF - rank 1's EOF) ÷ (ranks - 2), how long the end of the
//     image took from one rank to the next;
//   - CPU per GiB per rank: the process's user+system time ÷ (ranks × GiB);
//   - memory per rank: the most bytes a rank held in frame buffers at once (the fan-out's
//     own count), and the peak heap in use above the baseline ÷ ranks (sampled every 50 ms).
//
// With -pace the source is limited to that many MB/s, as a network link slower than the
// CPU would be: then the chain's pipelining shows (time ≈ size/rate + (ranks-1) × one
// frame's latency) instead of the CPU of all ranks sharing this machine's cores. -crypto
// first measures the per-byte costs that the stream pays (SHA-256, HMAC-SHA256, XXH64, and
// AES-GCM as a MAC for comparison) on 1 MiB buffers.
//
// Usage:
//
//	go run ./bench/fanout [-size 1024] [-ranks 2,8,64] [-reps 3] [-pace 0] [-frame 1024] [-queue 8] [-crypto]
package main

import (
	"crypto/rand"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/bench/internal/timing"
)

func main() {
	sizeMiB := flag.Int("size", 1024, "image size in MiB")
	ranksFlag := flag.String("ranks", "2,8,64", "chain lengths, comma-separated")
	reps := flag.Int("reps", 3, "repetitions per chain length (the median is reported)")
	pace := flag.Float64("pace", 0, "limit the source to this many MB/s (0: as fast as it goes)")
	frameKiB := flag.Int("frame", 256, "frame size in KiB")
	queue := flag.Int("queue", 8, "frames queued to the successor and to the sink")
	crypto := flag.Bool("crypto", false, "measure the per-byte costs first")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the chains to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		timing.Check(err)
		timing.Check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	log.Printf("%d CPUs (GOMAXPROCS %d), %s", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	if *crypto {
		perByte()
	}
	var ranks []int
	for _, s := range strings.Split(*ranksFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		timing.Check(err)
		ranks = append(ranks, n)
	}
	size := int64(*sizeMiB) << 20
	fmt.Printf("| ranks | time to the last byte (median of %d) | ÷ 2 ranks | per hop | CPU per GiB per rank | frames held per rank (max) | heap per rank |\n", *reps)
	fmt.Println("|---|---|---|---|---|---|---|")
	var base time.Duration
	for _, n := range ranks {
		var runs []figures
		for i := 0; i < *reps; i++ {
			f := runOnce(n, size, *frameKiB<<10, *queue, *pace)
			log.Printf("%d ranks, rep %d: last byte %v, per hop %v, all returned %v, CPU %.2f s, frames %d KiB/rank, heap %d KiB/rank",
				n, i+1, f.lastByte.Round(time.Millisecond), f.hop.Round(10*time.Microsecond), f.returned.Round(time.Millisecond),
				f.cpu.Seconds(), f.frames>>10, f.heap>>10)
			runs = append(runs, f)
		}
		med := median(runs)
		if n == 2 || base == 0 {
			base = med.lastByte
		}
		gib := float64(size) / (1 << 30)
		hop := "—"
		if n > 2 {
			hop = fmt.Sprintf("%.2f ms", float64(med.hop.Microseconds())/1000)
		}
		fmt.Printf("| %d | %.2f s | %.2f × | %s | %.2f s | %.1f MiB | %.1f MiB |\n", n, med.lastByte.Seconds(), med.lastByte.Seconds()/base.Seconds(),
			hop, med.cpu.Seconds()/float64(n)/gib, float64(med.frames)/(1<<20), float64(med.heap)/(1<<20))
	}
}

// median is the repetition with the median time to the last byte.
func median(runs []figures) figures {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b figures) int { return int(a.lastByte - b.lastByte) })
	return s[len(s)/2]
}

// perByte measures what the stream computes per byte, on 1 MiB buffers.
func perByte() {
	buf := make([]byte, 1<<20)
	_, _ = rand.Read(buf)
	fmt.Println("| per-byte cost, 1 MiB buffers | throughput |\n|---|---|")
	for _, c := range costs() {
		n, start := 0, time.Now()
		for time.Since(start) < time.Second {
			c.fn(buf)
			n++
		}
		fmt.Printf("| %s | %.2f GB/s |\n", c.name, float64(n)*float64(len(buf))/time.Since(start).Seconds()/1e9)
	}
	fmt.Println()
}

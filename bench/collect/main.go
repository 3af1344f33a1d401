// Command collect-bench measures `benchctl collect` on synthetic job folders: it writes a
// job with -nodes node folders (bench/collect/synth) and times results.Collect on it, then
// measures its memory: the live heap while the folders stream in (sampled after a GC every
// 500 nodes) and what the summary keeps afterwards.
//
// Usage: go run ./bench/collect [-nodes 10000] [-reps 5] [-rows 3] [-dir DIR]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"github.com/benchctl/benchctl/bench/collect/synth"
)

func main() {
	nodes := flag.Int("nodes", 10000, "node folders")
	reps := flag.Int("reps", 5, "timed repetitions (the median is reported)")
	rows := flag.Int("rows", 3, "rows per results CSV")
	dir := flag.String("dir", "", "shared directory to write the job into (default: a temp dir, removed after)")
	flag.Parse()
	shared := *dir
	if shared == "" {
		d, err := os.MkdirTemp("", "collect-bench-")
		check(err)
		defer os.RemoveAll(d)
		shared = d
	}
	const job = "9000001"
	start := time.Now()
	_, err := synth.WriteJob(shared, synth.Options{JobID: job, Nodes: *nodes, Rows: *rows, FailEvery: 1000, Seed: 1})
	check(err)
	log.Printf("wrote %d node folders in %s", *nodes, time.Since(start).Round(time.Millisecond))
	var walls []time.Duration
	var f figures
	for range *reps {
		f, _, err = collectOnce(shared, job, false)
		check(err)
		walls = append(walls, f.Wall)
	}
	slices.Sort(walls)
	m, _, err := collectOnce(shared, job, true)
	check(err)
	fmt.Printf("nodes %d, rows per CSV %d, %d reps\n", *nodes, *rows, *reps)
	fmt.Printf("collect wall time: median %s (min %s, max %s), %.1f µs per node\n", walls[len(walls)/2].Round(time.Millisecond),
		walls[0].Round(time.Millisecond), walls[len(walls)-1].Round(time.Millisecond), float64(walls[len(walls)/2].Microseconds())/float64(*nodes))
	fmt.Printf("allocated per collect: %.1f MiB (%.1f KiB per node, garbage included)\n", mib(f.Allocated), float64(f.Allocated)/1024/float64(*nodes))
	fmt.Printf("live heap while streaming (peak of samples): %.2f MiB (%.0f B per node)\n", mib(m.PeakStream), float64(m.PeakStream)/float64(*nodes))
	fmt.Printf("live heap after collect (summary + perf.csv kept): %.2f MiB (%.0f B per node)\n", mib(m.Retained), float64(m.Retained)/float64(*nodes))
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

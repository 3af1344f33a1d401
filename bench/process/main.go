// Command process-bench compares a one-node `benchctl run` with `runtime: process` with the
// same command started by a plain `sh -c`, on this machine (no engine, no testbed):
//
//	make build examples && go run ./bench/process [-reps 20]
//
// Both sides run the dummy example (3 rows to dummy.csv in $BENCHCTL_OUTPUT_DIR) and wait
// for it; benchctl also loads the manifest, makes the job's folder, writes job.json,
// node.json and status.json, inventories the GPUs, starts the benchmark in a process group
// of its own (through its rlimit shim), streams its output to the log and stderr, and
// records the trial. The target is the issue's: at most 1.1 × the raw start, or 30 ms more,
// whichever is larger.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/benchctl/benchctl/bench/internal/timing"
)

func main() {
	reps := flag.Int("reps", 20, "repetitions (the median is reported)")
	bin := flag.String("benchctl", "bin/benchctl", "benchctl binary")
	flag.Parse()
	dummy, err := filepath.Abs("models/dummy/bin/dummy")
	timing.Check(err)
	if _, err := os.Stat(dummy); err != nil {
		log.Fatalf("the dummy example is not built (run make examples, in the checkout's root): %v", err)
	}
	work, err := os.MkdirTemp("", "process-bench-")
	timing.Check(err)
	defer os.RemoveAll(work)
	manifest := filepath.Join(work, "benchmark.yaml")
	timing.Check(os.WriteFile(manifest, []byte(fmt.Sprintf(
		"name: process-bench\nruntime: process\ngpu: {vendor: none}\nbenchmarks:\n  - {name: dummy, command: [%s, --rows, \"3\"], results: dummy.csv}\n", dummy)), 0o644))
	out := filepath.Join(work, "raw")
	timing.Check(os.MkdirAll(out, 0o755))
	shared := filepath.Join(work, "shared")

	timeline := filepath.Join(work, "timeline.jsonl")
	ours := func() {
		b := exec.Command(*bin, "run", "-m", manifest, "--shared-dir", shared, "--log-level", "warn")
		b.Env = append(os.Environ(), "BENCHCTL_TIMELINE="+timeline)
		if o, err := b.CombinedOutput(); err != nil {
			log.Fatalf("benchctl run: %v\n%s", err, o)
		}
	}
	raw := func() {
		r := exec.Command("sh", "-c", `exec "$0" --rows 3`, dummy)
		r.Env = append(os.Environ(), "BENCHCTL_OUTPUT_DIR="+out, "NODE_RANK=0", "NNODES=1")
		if o, err := r.CombinedOutput(); err != nil {
			log.Fatalf("sh -c: %v\n%s", err, o)
		}
	}
	ours() // warm-up: the page cache holds both binaries
	raw()
	var rs, os_ []time.Duration
	for range *reps {
		rs = append(rs, timing.Time(raw))
		os_ = append(os_, timing.Time(ours))
	}
	mr, mo := timing.Median(rs), timing.Median(os_)
	target := max(mr*11/10, mr+30*time.Millisecond)
	verdict := "met"
	if mo > target {
		verdict = "NOT met"
	}
	fmt.Printf("| one-node run, median of %d | sh -c | benchctl run (runtime: process) | ratio | overhead | target (≤ 1.1 × or +30 ms) |\n|---|---|---|---|---|---|\n", *reps)
	fmt.Printf("| dummy (3 rows) | %.1f ms | %.1f ms | %.2f × | %.1f ms | %.1f ms: %s |\n", ms(mr), ms(mo), mo.Seconds()/mr.Seconds(), ms(mo-mr), ms(target), verdict)
	timing.Breakdown(os.Stdout, timeline, mo)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

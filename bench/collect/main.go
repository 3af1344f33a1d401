// Command collect-bench measures `benchctl collect` on synthetic job folders: it writes a
// job with -nodes node folders (bench/collect/synth) and times results.Collect on it, then
// measures its memory: the live heap while the folders stream in (sampled after a GC every
// -sample nodes) and what the summary keeps afterwards. With -variants, the job is an
// experiment: every node runs -trials trials (after -warmup warmups) of each of -variants
// variants, so it holds nodes × variants × (trials + warmup) node results, and one node
// times out in every -fail-trial-every-th trial of the plan (the trial counts as failed;
// without -variants, one node in 1,000 times out). With -benchctl,
// the binary's `collect` also runs on the same job as a child process, and its wall time
// and peak resident set (getrusage) are reported.
//
// Usage:
//
//	go run ./bench/collect [-nodes 10000] [-reps 5] [-rows 3] [-dir DIR]
//	go run ./bench/collect -nodes 1000 -variants 20 -trials 5 [-benchctl bin/benchctl] [-cpuprofile FILE]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/benchctl/benchctl/bench/collect/synth"
	"github.com/benchctl/benchctl/jobdir"
)

func main() {
	nodes := flag.Int("nodes", 10000, "node folders")
	reps := flag.Int("reps", 5, "timed repetitions (the median is reported)")
	rows := flag.Int("rows", 3, "rows per results CSV")
	variants := flag.Int("variants", 0, "variants of an experiment (0: a job without one)")
	trials := flag.Int("trials", 5, "measured trials per variant (with -variants)")
	warmup := flag.Int("warmup", 0, "warmup trials per variant (with -variants)")
	failTrial := flag.Int("fail-trial-every", 7, "with -variants: every n-th trial of the plan has one node time out (the trial fails)")
	sample := flag.Int("sample", 0, "sample the live heap every this many nodes (default: nodes/20, at least 1)")
	bin := flag.String("benchctl", "", "also run this benchctl binary's collect on the job (wall time, peak RSS)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed collects to this file")
	dir := flag.String("dir", "", "shared directory to write the job into (default: a temp dir, removed after)")
	flag.Parse()
	shared := *dir
	if shared == "" {
		d, err := os.MkdirTemp("", "collect-bench-")
		check(err)
		defer os.RemoveAll(d)
		shared = d
	}
	if *sample <= 0 {
		*sample = max(1, *nodes/20)
	}
	const job = "9000001"
	o := synth.Options{JobID: job, Nodes: *nodes, Rows: *rows, FailEvery: 1000, Seed: 1}
	if *variants > 0 {
		// A node that failed every trial would fail every trial of the job: failures are
		// whole trials instead.
		o.Variants, o.Trials, o.Warmup, o.FailEvery, o.FailTrialEvery = *variants, *trials, *warmup, 0, *failTrial
	}
	runs := *nodes
	if *variants > 0 {
		runs = *nodes * *variants * (*trials + *warmup)
	}
	start := time.Now()
	_, err := synth.WriteJob(shared, o)
	check(err)
	log.Printf("wrote %d node folders (%d node results) in %s", *nodes, runs, time.Since(start).Round(time.Millisecond))
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		check(err)
		check(pprof.StartCPUProfile(f))
	}
	var walls []time.Duration
	var f figures
	for range *reps {
		f, _, err = collectOnce(shared, job, 0)
		check(err)
		walls = append(walls, f.Wall)
	}
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	slices.Sort(walls)
	m, _, err := collectOnce(shared, job, *sample)
	check(err)
	if *variants > 0 {
		fmt.Printf("experiment: %d variants × (%d trials + %d warmup) on every node\n", *variants, *trials, *warmup)
	}
	fmt.Printf("nodes %d, node results %d, rows per CSV %d, %d reps\n", *nodes, runs, *rows, *reps)
	fmt.Printf("collect wall time: median %s (min %s, max %s), %.1f µs per node result\n", walls[len(walls)/2].Round(time.Millisecond),
		walls[0].Round(time.Millisecond), walls[len(walls)-1].Round(time.Millisecond), float64(walls[len(walls)/2].Microseconds())/float64(runs))
	fmt.Printf("allocated per collect: %.1f MiB (%.2f KiB per node result, garbage included)\n", mib(f.Allocated), float64(f.Allocated)/1024/float64(runs))
	fmt.Printf("live heap while streaming (peak of samples every %d nodes): %.2f MiB (%.0f B per node result)\n", *sample, mib(m.PeakStream), float64(m.PeakStream)/float64(runs))
	fmt.Printf("live heap after collect (summary + perf.csv kept): %.2f MiB (%.0f B per node result)\n", mib(m.Retained), float64(m.Retained)/float64(runs))
	if *bin != "" {
		cliCollect(*bin, shared, job)
	}
	jd := jobdir.Layout{Shared: shared}.Job(job, 0)
	for _, name := range []string{jobdir.PerfFile, jobdir.SummaryFile, jobdir.ReportFile} {
		if fi, err := os.Stat(jd.Output(name)); err == nil {
			fmt.Printf("%s: %.1f MiB\n", name, mib(uint64(fi.Size())))
		}
	}
}

// cliCollect runs `benchctl collect` on the job as a child process and prints its wall time,
// CPU time and peak resident set. Exit 3 (a node failed: one in 1,000 timed out) is expected.
func cliCollect(bin, shared, job string) {
	cmd := exec.Command(bin, "collect", job, "--shared-dir", shared, "-o", "csv", "--log-level", "warn")
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 3) {
		log.Fatalf("benchctl collect: %v", err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Printf("benchctl collect (child process): wall %s, CPU %s (user %s, system %s), peak RSS %.1f MiB\n", wall.Round(time.Millisecond),
		(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Round(time.Millisecond),
		cmd.ProcessState.UserTime().Round(time.Millisecond), cmd.ProcessState.SystemTime().Round(time.Millisecond), float64(ru.Maxrss)/1024)
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

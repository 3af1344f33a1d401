// Command cpubench measures a node's CPU and memory with three kernels, each the best of
// --reps runs on all GOMAXPROCS goroutines (or --threads):
//
//   - matmul: a cache-tiled float64 matrix multiply C = A*B of size --n, in GFLOP/s
//     (2*n^3 floating-point operations over the time), checked against a naive dot
//     product on two sub-blocks of C;
//   - triad: the STREAM triad a[i] = b[i] + s*c[i] over three arrays of --mem-mib MiB
//     each, in GB/s (3 arrays * 8 bytes * elements over the time; 1 GB = 1e9 bytes);
//   - copy: the STREAM copy a[i] = b[i] (2 arrays * 8 bytes * elements), unless --copy=false.
//
// It writes one row per kernel to cpubench.csv in $BENCHCTL_OUTPUT_DIR and prints the
// matmul GFLOP/s as its performance line.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/benchctl/benchctl/models/internal/example"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

type options struct {
	n, block, memMiB, reps, threads int
	copy                            bool
}

// parseFlags reads the command line; ok is false, with the message on stderr, when it is
// wrong (code is then the exit status: 0 for -h, 2 otherwise).
func parseFlags(args []string, stderr io.Writer) (o options, code int, ok bool) {
	fs := example.NewFlagSet("cpubench", "Measures matmul GFLOP/s and STREAM triad/copy GB/s; writes cpubench.csv.", stderr)
	fs.IntVar(&o.n, "n", 512, "matrix size (n×n float64)")
	fs.IntVar(&o.block, "block", 64, "matmul tile size")
	fs.IntVar(&o.memMiB, "mem-mib", 64, "size of each of the three STREAM arrays, in MiB")
	fs.IntVar(&o.reps, "reps", 5, "repetitions of each kernel; the best is reported")
	fs.IntVar(&o.threads, "threads", 0, "goroutines to use (0: GOMAXPROCS)")
	fs.BoolVar(&o.copy, "copy", true, "also run the STREAM copy kernel")
	if code, ok := example.ParseFlags(fs, args); !ok {
		return o, code, false
	}
	var bad string
	switch {
	case o.n < 1 || o.n > 16384:
		bad = fmt.Sprintf("--n %d: must be between 1 and 16384", o.n)
	case o.block < 1:
		bad = fmt.Sprintf("--block %d: must be at least 1", o.block)
	case o.memMiB < 1 || o.memMiB > 1<<20:
		bad = fmt.Sprintf("--mem-mib %d: must be between 1 and %d", o.memMiB, 1<<20)
	case o.reps < 1:
		bad = fmt.Sprintf("--reps %d: must be at least 1", o.reps)
	case o.threads < 0:
		bad = fmt.Sprintf("--threads %d: must not be negative", o.threads)
	}
	if bad != "" {
		fmt.Fprintln(stderr, "cpubench:", bad)
		return o, 2, false
	}
	if o.threads == 0 {
		o.threads = runtime.GOMAXPROCS(0)
	}
	return o, 0, true
}

// measured is one kernel's result.
type measured struct {
	model, metric, problem string
	rate                   float64 // in metric units
	best                   time.Duration
}

// run is the whole program, with its inputs and outputs passed in for tests; it returns
// the exit status.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	e, err := example.ReadEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "cpubench:", err)
		return 2
	}
	fmt.Fprintf(stderr, "cpubench: node rank %d of %d, %d threads, best of %d\n", e.Rank, e.NNodes, o.threads, o.reps)
	res, err := benchmark(o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cpubench: error:", err)
		return 1
	}
	var rows []example.Result
	for _, m := range res {
		perf := strconv.FormatFloat(m.rate, 'f', 3, 64)
		secs := strconv.FormatFloat(m.best.Seconds(), 'f', 6, 64)
		rows = append(rows, example.Result{Model: m.model, Performance: perf, Metric: m.metric, Status: "SUCCESS", Extra: []string{m.problem, strconv.Itoa(o.threads), secs}})
		fmt.Fprintf(stdout, "%s: %s %s (%s, best %ss)\n", m.model, perf, m.metric, m.problem, secs)
	}
	path, err := example.WriteResults(e, "cpubench.csv", []string{"problem", "threads", "best_seconds"}, rows, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cpubench:", err)
		return 1
	}
	fmt.Fprintf(stderr, "cpubench: wrote %d rows to %s\n", len(rows), path)
	fmt.Fprintf(stdout, "performance: %s %s\n", rows[0].Performance, rows[0].Metric)
	return 0
}

// benchmark runs the kernels, checks their results and returns their rates.
func benchmark(o options, stderr io.Writer) ([]measured, error) {
	n := o.n
	a, b, c := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
	fillMatrix(a, 1)
	fillMatrix(b, 2)
	fmt.Fprintf(stderr, "cpubench: matmul n=%d block=%d\n", n, o.block)
	best := bestOf(o.reps, func() { clear(c) }, func() { matmul(c, a, b, n, o.block, o.threads) })
	if err := checkMatmul(c, a, b, n, 16); err != nil {
		return nil, err
	}
	flops := 2 * float64(n) * float64(n) * float64(n)
	out := []measured{{"cpubench_matmul_gflops", "GFLOP/s", fmt.Sprintf("n=%d", n), flops / seconds(best) / 1e9, best}}
	fmt.Fprintf(stderr, "cpubench: matmul %.3f GFLOP/s\n", out[0].rate)

	elems := o.memMiB << 20 / 8
	a, b, c = make([]float64, elems), make([]float64, elems), make([]float64, elems)
	fillStream(a, b, c, o.threads)
	problem := fmt.Sprintf("%dMiB_per_array", o.memMiB)
	const s = 3.0
	fmt.Fprintf(stderr, "cpubench: triad over 3 x %d MiB\n", o.memMiB)
	best = bestOf(o.reps, func() {}, func() { triad(a, b, c, s, o.threads) })
	if err := checkTriad(a, b, c, s); err != nil {
		return nil, err
	}
	out = append(out, measured{"cpubench_triad", "GB/s", problem, 3 * 8 * float64(elems) / seconds(best) / 1e9, best})
	fmt.Fprintf(stderr, "cpubench: triad %.3f GB/s\n", out[1].rate)
	if o.copy {
		fmt.Fprintf(stderr, "cpubench: copy over 2 x %d MiB\n", o.memMiB)
		best = bestOf(o.reps, func() {}, func() { copyKernel(a, b, o.threads) })
		if err := checkCopy(a, b); err != nil {
			return nil, err
		}
		out = append(out, measured{"cpubench_copy", "GB/s", problem, 2 * 8 * float64(elems) / seconds(best) / 1e9, best})
		fmt.Fprintf(stderr, "cpubench: copy %.3f GB/s\n", out[2].rate)
	}
	return out, nil
}

// seconds is d in seconds, at least a nanosecond (a tiny problem can time as zero).
func seconds(d time.Duration) float64 { return max(d, time.Nanosecond).Seconds() }

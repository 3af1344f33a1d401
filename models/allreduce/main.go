// Command allreduce measures a ring all-reduce over TCP between the NNODES nodes of a
// benchctl run, the way nccl-tests' all_reduce_perf measures one between GPUs.
//
// Rank 0 listens on MASTER_PORT; the other ranks register with it at
// MASTER_ADDR:MASTER_PORT (retrying until --connect-timeout) and get every rank's ring
// address back. Each rank then connects to rank+1 and sums a float32 vector of --size
// bytes with a reduce-scatter and an all-gather (n-1 steps each, sending and receiving at
// once), --warmup untimed then --iters timed times, checking every element of every result
// exactly. It reports the mean algorithm bandwidth (size / time) and bus bandwidth
// (algbw * 2(n-1)/n, the NCCL definition) in GB/s (1e9 bytes). With NNODES=1 there is no
// network: it times a local copy of the vector and reports that as both bandwidths.
// Rank 0 writes allreduce.csv; every rank prints its own performance line.
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/benchctl/benchctl/models/internal/example"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

type options struct {
	size                      sizeFlag
	iters, warmup             int
	connectTimeout, ioTimeout time.Duration
}

// parseFlags reads the command line; ok is false, with the message on stderr, when it is
// wrong (code is then the exit status: 0 for -h, 2 otherwise).
func parseFlags(args []string, stderr io.Writer) (o options, code int, ok bool) {
	fs := example.NewFlagSet("allreduce", "Times a TCP ring all-reduce across NNODES nodes; rank 0 writes allreduce.csv.", stderr)
	o.size = 64 << 20
	fs.Var(&o.size, "size", "bytes of float32 to all-reduce, e.g. 8M, 64M, 1G")
	fs.IntVar(&o.iters, "iters", 5, "timed iterations")
	fs.IntVar(&o.warmup, "warmup", 1, "untimed iterations first")
	fs.DurationVar(&o.connectTimeout, "connect-timeout", 120*time.Second, "how long to wait for the other ranks to start and connect")
	fs.DurationVar(&o.ioTimeout, "io-timeout", 60*time.Second, "how long one network read or write may stall")
	if code, ok := example.ParseFlags(fs, args); !ok {
		return o, code, false
	}
	var bad string
	switch {
	case o.size < 4 || o.size%4 != 0 || o.size > 64<<30:
		bad = fmt.Sprintf("--size %d: must be a multiple of 4 bytes (float32), from 4 to 64G", o.size)
	case o.iters < 1:
		bad = fmt.Sprintf("--iters %d: must be at least 1", o.iters)
	case o.warmup < 0:
		bad = fmt.Sprintf("--warmup %d: must not be negative", o.warmup)
	case o.connectTimeout <= 0 || o.ioTimeout <= 0:
		bad = "--connect-timeout and --io-timeout must be positive"
	}
	if bad != "" {
		fmt.Fprintln(stderr, "allreduce:", bad)
		return o, 2, false
	}
	return o, 0, true
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
		fmt.Fprintln(stderr, "allreduce:", err)
		return 2
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "allreduce[rank %d/%d]: %s\n", e.Rank, e.NNodes, fmt.Sprintf(format, args...))
	}
	logf("%s of float32 (%d elements), %d warm-up and %d timed iterations", formatSize(int64(o.size)), o.size/4, o.warmup, o.iters)
	var g *ring
	if e.NNodes > 1 {
		if g, err = setupRing(e, o.connectTimeout, o.ioTimeout, logf); err != nil {
			logf("error: %v", err)
			return 1
		}
		defer g.close()
	} else {
		logf("single rank: no network, timing a local copy of the vector")
	}
	avg, err := measure(g, e, o, logf)
	if err != nil {
		logf("error: %v", err)
		return 1
	}
	algbw := float64(o.size) / avg.Seconds() / 1e9
	busbw := algbw // one rank: the local copy
	if e.NNodes > 1 {
		busbw = algbw * 2 * float64(e.NNodes-1) / float64(e.NNodes)
	}
	alg, bus := strconv.FormatFloat(algbw, 'f', 3, 64), strconv.FormatFloat(busbw, 'f', 3, 64)
	fmt.Fprintf(stdout, "rank %d of %d: %d bytes, mean %.6f s, algbw %s GB/s, busbw %s GB/s\n", e.Rank, e.NNodes, o.size, avg.Seconds(), alg, bus)
	if e.Rank == 0 {
		extra := []string{strconv.FormatInt(int64(o.size), 10), strconv.Itoa(o.iters), strconv.FormatFloat(avg.Seconds(), 'f', 6, 64)}
		rows := []example.Result{
			{Model: "allreduce_busbw", Performance: bus, Metric: "GB/s", Status: "SUCCESS", Extra: extra},
			{Model: "allreduce_algbw", Performance: alg, Metric: "GB/s", Status: "SUCCESS", Extra: extra},
		}
		path, err := example.WriteResults(e, "allreduce.csv", []string{"size_bytes", "iterations", "mean_seconds"}, rows, stderr)
		if err != nil {
			logf("error: %v", err)
			return 1
		}
		logf("wrote %s", path)
		// The all-reduce's bandwidth is one figure for the job: rank 0 reports it, in its
		// CSV and here (a performance line on every rank would be rows of another shape
		// beside rank 0's CSV).
		fmt.Fprintf(stdout, "performance: %s busbw_GBps\n", bus)
	}
	return 0
}

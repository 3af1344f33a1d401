// Command dummy is the smallest benchctl benchmark. It measures nothing: it writes --rows
// rows of made-up but deterministic numbers (100*(i+1) + NODE_RANK samples per second for
// row i) to dummy.csv in $BENCHCTL_OUTPUT_DIR and prints the first as its performance line.
// --sleep makes it take a while, and --fail-rank makes one node fail on purpose with
// --exit-code, at once or after --fail-after, before the sleep, so benchctl's tests can
// exercise slow and failing nodes.
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
	rows      int
	sleep     time.Duration
	failRank  int
	failAfter time.Duration
	exitCode  int
	say       string
}

// parseFlags reads the command line; ok is false, with the message on stderr, when it is
// wrong (code is then the exit status: 0 for -h, 2 otherwise).
func parseFlags(args []string, stderr io.Writer) (o options, code int, ok bool) {
	fs := example.NewFlagSet("dummy", "Writes deterministic fake results to dummy.csv in $BENCHCTL_OUTPUT_DIR.", stderr)
	fs.IntVar(&o.rows, "rows", 3, "number of result rows to write (at least 1)")
	fs.DurationVar(&o.sleep, "sleep", 0, "how long to sleep before writing the results, e.g. 10s")
	fs.IntVar(&o.failRank, "fail-rank", -1, "the node rank that fails on purpose (-1: none)")
	fs.IntVar(&o.exitCode, "exit-code", 3, "exit status of the failing rank (1-255)")
	fs.DurationVar(&o.failAfter, "fail-after", 0, "how long the failing rank runs before it fails, e.g. 2s")
	fs.StringVar(&o.say, "say", "", "a line to print on stderr first (e.g. a Python error, to test the log error scan)")
	if code, ok := example.ParseFlags(fs, args); !ok {
		return o, code, false
	}
	var bad string
	switch {
	case o.rows < 1:
		bad = fmt.Sprintf("--rows %d: must be at least 1", o.rows)
	case o.sleep < 0:
		bad = fmt.Sprintf("--sleep %s: must not be negative", o.sleep)
	case o.failRank < -1:
		bad = fmt.Sprintf("--fail-rank %d: must be a node rank, or -1 for none", o.failRank)
	case o.failAfter < 0:
		bad = fmt.Sprintf("--fail-after %s: must not be negative", o.failAfter)
	case o.exitCode < 1 || o.exitCode > 255:
		bad = fmt.Sprintf("--exit-code %d: must be between 1 and 255", o.exitCode)
	}
	if bad != "" {
		fmt.Fprintln(stderr, "dummy:", bad)
		return o, 2, false
	}
	return o, 0, true
}

// rowPerformance is the made-up performance of row i on node rank.
func rowPerformance(i, rank int) int { return 100*(i+1) + rank }

// run is the whole program, with its inputs and outputs passed in for tests; it returns
// the exit status.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	e, err := example.ReadEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "dummy:", err)
		return 2
	}
	fmt.Fprintf(stderr, "dummy: node rank %d of %d, %d rows\n", e.Rank, e.NNodes, o.rows)
	if o.say != "" {
		fmt.Fprintln(stderr, o.say)
	}
	if e.Rank == o.failRank {
		if o.failAfter > 0 {
			fmt.Fprintf(stderr, "dummy: node rank %d fails in %s\n", e.Rank, o.failAfter)
			time.Sleep(o.failAfter)
		}
		fmt.Fprintf(stderr, "dummy: error: node rank %d fails on purpose (--fail-rank %d), exit status %d\n", e.Rank, o.failRank, o.exitCode)
		return o.exitCode
	}
	if o.sleep > 0 {
		fmt.Fprintf(stderr, "dummy: sleeping %s\n", o.sleep)
		time.Sleep(o.sleep)
	}
	rows := make([]example.Result, o.rows)
	for i := range rows {
		perf := strconv.Itoa(rowPerformance(i, e.Rank))
		rows[i] = example.Result{Model: fmt.Sprintf("dummy_%d", i), Performance: perf, Metric: "samples_per_second", Status: "SUCCESS"}
		fmt.Fprintf(stderr, "dummy: %s %s samples_per_second\n", rows[i].Model, perf)
	}
	path, err := example.WriteResults(e, "dummy.csv", nil, rows, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dummy:", err)
		return 1
	}
	fmt.Fprintf(stderr, "dummy: wrote %d rows to %s\n", len(rows), path)
	fmt.Fprintf(stdout, "performance: %s samples_per_second\n", rows[0].Performance)
	return 0
}

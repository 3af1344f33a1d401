// Package timing holds what the benchmark programs under bench/ share: timing a call, the
// median of repetitions, failing at once on a setup error, and where benchctl's own time
// went (its BENCHCTL_TIMELINE marks).
package timing

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"time"
)

// Time runs fn and returns how long it took.
func Time(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// Median is the middle of the repetitions (the upper middle for an even count).
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Check stops the program on a setup error: a benchmark that cannot set up has no figure.
func Check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// Breakdown prints where benchctl's time went, from the BENCHCTL_TIMELINE marks in file (one
// JSON line per command): the median of each step over the commands. The first mark counts
// from the init of the package that records them; "before it" is the rest of wall, the
// commands' median wall time (the exec, the dynamic loader, the Go runtime's start, the
// exit).
func Breakdown(w io.Writer, file string, wall time.Duration) {
	f, err := os.Open(file)
	Check(err)
	defer f.Close()
	steps := map[string][]time.Duration{}
	var order []string
	var ends []time.Duration
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ps []struct {
			Name string  `json:"name"`
			MS   float64 `json:"ms"`
		}
		Check(json.Unmarshal(sc.Bytes(), &ps))
		prev := 0.0
		for _, p := range ps {
			if _, ok := steps[p.Name]; !ok {
				order = append(order, p.Name)
			}
			steps[p.Name] = append(steps[p.Name], time.Duration((p.MS-prev)*float64(time.Millisecond)))
			prev = p.MS
		}
		ends = append(ends, time.Duration(prev*float64(time.Millisecond)))
	}
	Check(sc.Err())
	if len(ends) == 0 {
		log.Fatalf("%s: no marks (was BENCHCTL_TIMELINE passed on?)", file)
	}
	fmt.Fprintf(w, "\n| step of benchctl run (ends at the mark) | median |\n|---|---|\n")
	fmt.Fprintf(w, "| exec, loader, runtime start and exit (wall less the marks) | %.1f ms |\n", MS(wall-Median(ends)))
	for _, n := range order {
		fmt.Fprintf(w, "| %s | %.1f ms |\n", n, MS(Median(steps[n])))
	}
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

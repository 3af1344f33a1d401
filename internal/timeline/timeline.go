// Package timeline records where a command's wall time goes, for the run-overhead
// benchmarks (bench/run, bench/process): with BENCHCTL_TIMELINE naming a file, each Mark is
// the time since this package's init (among the first of the binary's: it imports only the
// standard library's basics) and Write appends them to the file when the command ends, as
// one JSON line (a list of points) per command. Without it, Mark costs a load and a branch.
package timeline

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// Env names the file the marks are written to.
const Env = "BENCHCTL_TIMELINE"

var (
	start = time.Now()
	file  = os.Getenv(Env)
	mu    sync.Mutex
	marks []Point
)

// Point is one mark: what had just happened, and when (since the process's start, nearly).
type Point struct {
	Name string  `json:"name"`
	MS   float64 `json:"ms"`
}

// MaxMarks bounds what is kept: a command that marks in a loop keeps its first ones.
const MaxMarks = 10000

// Mark records that name has just happened, when BENCHCTL_TIMELINE is set.
func Mark(name string) {
	if file == "" {
		return
	}
	at := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if len(marks) < MaxMarks {
		marks = append(marks, Point{Name: name, MS: float64(at.Microseconds()) / 1000})
	}
}

// Write appends the marks, and a last one ("exit"), to BENCHCTL_TIMELINE's file as one JSON
// line; nothing when it is not set.
func Write() error {
	if file == "" {
		return nil
	}
	Mark("exit")
	mu.Lock()
	line, err := json.Marshal(marks)
	mu.Unlock()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

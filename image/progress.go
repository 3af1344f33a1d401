package image

import (
	"io"
	"sync"
	"time"
)

// Progress is a report on long work: a build step, or bytes moved out of a total.
type Progress struct {
	Phase string // build, save, load, verify, export
	Step  string // a build step or builder output line (Phase build)
	Done  int64  // bytes so far
	Total int64  // bytes in all; 0 when unknown
	Final bool   // the last report of this phase
}

// ProgressFunc receives progress reports. It may be nil. Byte reports come at most every
// progressEvery, plus a final one; the caller decides how to show them.
type ProgressFunc func(Progress)

const progressEvery = 200 * time.Millisecond

// counter counts bytes (always) and reports them, throttled, when it has a ProgressFunc.
type counter struct {
	mu    sync.Mutex
	fn    ProgressFunc
	phase string
	total int64
	done  int64
	last  time.Time
}

func newCounter(fn ProgressFunc, phase string, total int64) *counter {
	return &counter{fn: fn, phase: phase, total: total}
}

func (c *counter) add(n int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.done += int64(n)
	if c.fn == nil {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	report := now.Sub(c.last) >= progressEvery
	if report {
		c.last = now
	}
	p := Progress{Phase: c.phase, Done: c.done, Total: c.total}
	c.mu.Unlock()
	if report {
		c.fn(p)
	}
}

func (c *counter) finish() {
	if c == nil || c.fn == nil {
		return
	}
	c.mu.Lock()
	p := Progress{Phase: c.phase, Done: c.done, Total: c.total, Final: true}
	c.mu.Unlock()
	c.fn(p)
}

type countingWriter struct {
	w io.Writer
	c *counter
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.c.add(n)
	return n, err
}

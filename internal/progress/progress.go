package progress

import (
	"io"
	"sync"
	"time"
)

// Report is a report on long work: a build step, or bytes moved out of a total.
type Report struct {
	Phase string // build, save, load, verify, export, stream, …
	Step  string // a build step or builder output line (Phase build)
	Done  int64  // bytes so far
	Total int64  // bytes in all; 0 when unknown
	Final bool   // the last report of this phase
}

// Func receives progress reports. It may be nil. Byte reports come at most every Every,
// plus a final one; the caller decides how to show them.
type Func func(Report)

// Every is the least time between two byte reports of one Counter.
const Every = 200 * time.Millisecond

// Counter counts bytes (always) and reports them, throttled to one report per Every, when
// it has a Func. A nil *Counter counts nothing. It is safe for concurrent use; its Func is
// called on the goroutine that adds, without the Counter's lock held.
type Counter struct {
	mu    sync.Mutex
	fn    Func
	phase string
	total int64
	done  int64
	last  time.Time
}

// NewCounter is a counter of phase's bytes out of total (0: unknown) reporting to fn (nil:
// it only counts).
func NewCounter(fn Func, phase string, total int64) *Counter {
	return &Counter{fn: fn, phase: phase, total: total}
}

// Add counts n more bytes, and reports them when Every has passed since the last report.
func (c *Counter) Add(n int) {
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
	report := now.Sub(c.last) >= Every
	if report {
		c.last = now
	}
	p := Report{Phase: c.phase, Done: c.done, Total: c.total}
	c.mu.Unlock()
	if report {
		c.fn(p)
	}
}

// SetTotal sets the bytes in all, once they are known.
func (c *Counter) SetTotal(n int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.total = n
	c.mu.Unlock()
}

// Done is the bytes counted so far.
func (c *Counter) Done() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Finish sends the final report of the phase (whatever the throttle).
func (c *Counter) Finish() {
	if c == nil || c.fn == nil {
		return
	}
	c.mu.Lock()
	p := Report{Phase: c.phase, Done: c.done, Total: c.total, Final: true}
	c.mu.Unlock()
	c.fn(p)
}

// Writer counts what it writes to W with C.
type Writer struct {
	W io.Writer
	C *Counter
}

func (w Writer) Write(p []byte) (int, error) {
	n, err := w.W.Write(p)
	w.C.Add(n)
	return n, err
}

package jobchan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Worker is a non-zero rank's side of the barrier.
type Worker struct {
	cfg Config
	ctx context.Context // bounds reconnecting

	mu       sync.Mutex
	c        *conn
	changed  chan struct{}
	releases map[string]map[string]string
	aborted  string
	code     int
	dead     error
	pending  string // the phase being waited for, re-announced after a reconnect
	closed   bool
	hint     string // last good leader address
	hintFn   func() string
}

// Join connects to the leader, retrying with backoff until ctx is done: workers start at
// once, rank 0 may be later. addrHint, if not nil, is asked on every round for an address to
// try before the port range (rank 0 publishes its address in the job folder when there is a
// shared directory).
func Join(ctx context.Context, cfg Config, addrHint func() string) (*Worker, error) {
	w := &Worker{cfg: cfg, ctx: ctx, changed: make(chan struct{}), releases: map[string]map[string]string{}, hintFn: addrHint}
	c, err := w.connect(ctx)
	if err != nil {
		return nil, err
	}
	w.c = c
	go w.read(c)
	return w, nil
}

func (w *Worker) candidates() []string {
	var out []string
	if w.hintFn != nil {
		if h := w.hintFn(); h != "" {
			w.hint = h
		}
	}
	if w.hint != "" {
		out = append(out, w.hint)
	}
	for _, p := range w.cfg.Ports {
		a := net.JoinHostPort(w.cfg.Master, strconv.Itoa(p))
		if a != w.hint {
			out = append(out, a)
		}
	}
	return out
}

// connect dials the candidates until one is this job's leader, with backoff.
func (w *Worker) connect(ctx context.Context) (*conn, error) {
	log := w.cfg.logger()
	backoff := 50 * time.Millisecond
	var last error
	lastLog := time.Now()
	for {
		for _, addr := range w.candidates() {
			c, err := w.handshake(ctx, addr)
			if err == nil {
				w.hint = addr
				return c, nil
			}
			last = fmt.Errorf("%s: %w", addr, err)
			var ae *authError
			if errors.As(err, &ae) {
				log.Warn("barrier: not this job's barrier", "addr", addr, "why", ae.why)
			}
		}
		if time.Since(lastLog) >= w.cfg.every() {
			lastLog = time.Now()
			log.Info(fmt.Sprintf("barrier: waiting for rank 0 (%s) to listen", w.cfg.host(0)), "last", last)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("barrier: could not reach rank 0 (%s) on %s ports %d-%d before the deadline: %v",
				w.cfg.host(0), w.cfg.Master, w.cfg.Ports[0], w.cfg.Ports[len(w.cfg.Ports)-1], last)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (w *Worker) handshake(ctx context.Context, addr string) (*conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := newConn(nc, w.cfg.Secret, w.cfg.Job)
	hello, err := c.recv(time.Now().Add(ioTimeout))
	if err == nil && hello.Type != msgHello {
		err = &authError{"expected hello"}
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.session = hello.Session
	if err := c.send(message{Type: msgJoin, Rank: w.cfg.Rank, Host: w.cfg.host(w.cfg.Rank)}, ioTimeout); err != nil {
		nc.Close()
		return nil, err
	}
	welcome, err := c.recv(time.Now().Add(ioTimeout))
	if err == nil && welcome.Type != msgWelcome {
		err = &authError{"expected welcome"}
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (w *Worker) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// read handles the leader's messages; a dropped connection is re-established.
func (w *Worker) read(c *conn) {
	for {
		m, err := c.recv(time.Time{})
		if err != nil {
			w.mu.Lock()
			closed := w.closed
			w.mu.Unlock()
			if closed {
				return
			}
			w.cfg.logger().Warn(fmt.Sprintf("barrier: lost the connection to rank 0 (%s); reconnecting", w.cfg.host(0)), "err", err)
			c.c.Close()
			nc, cerr := w.connect(w.ctx)
			w.mu.Lock()
			if cerr != nil {
				w.dead = fmt.Errorf("barrier: lost the connection to rank 0 (%s): %v", w.cfg.host(0), err)
				w.notify()
				w.mu.Unlock()
				return
			}
			w.c = nc
			pending := w.pending
			w.mu.Unlock()
			if pending != "" {
				_ = nc.send(message{Type: msgArrive, Phase: pending}, ioTimeout)
			}
			c = nc
			continue
		}
		w.mu.Lock()
		switch m.Type {
		case msgRelease:
			w.releases[m.Phase] = m.Data
		case msgAbort:
			w.aborted = m.Reason
			w.code, _ = strconv.Atoi(m.Data["exitCode"])
		}
		w.notify()
		w.mu.Unlock()
	}
}

// Wait announces that this node reached phase and blocks until rank 0 releases it (its
// data), aborts the job (*AbortError), or ctx ends.
func (w *Worker) Wait(ctx context.Context, phase string) (map[string]string, error) {
	w.mu.Lock()
	w.pending = phase
	c := w.c
	w.mu.Unlock()
	if err := c.send(message{Type: msgArrive, Phase: phase}, ioTimeout); err != nil {
		w.cfg.logger().Warn("barrier: could not announce arrival; will retry after reconnecting", "err", err)
	}
	tick := time.NewTicker(w.cfg.every())
	defer tick.Stop()
	start := time.Now()
	for {
		w.mu.Lock()
		data, ok := w.releases[phase]
		aborted, dead, changed := w.aborted, w.dead, w.changed
		w.mu.Unlock()
		switch {
		case aborted != "":
			return nil, &AbortError{Reason: aborted, Code: w.code}
		case ok:
			return data, nil
		case dead != nil:
			return nil, dead
		}
		select {
		case <-changed:
		case <-tick.C:
			w.cfg.logger().Info(fmt.Sprintf("barrier %s: waiting for rank 0 (%s) for %s", phase, w.cfg.host(0), time.Since(start).Round(time.Second)))
		case <-ctx.Done():
			return nil, fmt.Errorf("barrier %s: timed out waiting for rank 0 (%s)", phase, w.cfg.host(0))
		}
	}
}

// Fail tells rank 0 that this node failed, so that it aborts the job for everyone.
func (w *Worker) Fail(reason string, code int) error {
	w.mu.Lock()
	c := w.c
	w.mu.Unlock()
	return c.send(message{Type: msgFail, Reason: reason, Data: map[string]string{"exitCode": strconv.Itoa(code)}}, ioTimeout)
}

// Close drops the connection to the leader.
func (w *Worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.dead = errors.New("barrier: closed")
	if w.c != nil {
		_ = w.c.send(message{Type: msgBye}, time.Second)
		return w.c.c.Close()
	}
	return nil
}

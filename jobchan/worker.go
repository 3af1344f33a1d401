package jobchan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/admit"
)

// Worker is a non-zero rank's side of the job channel.
type Worker struct {
	cfg      Config
	instance string // this process, across reconnects: tells a reconnect from a second process
	warn     *limiter
	quit     chan struct{} // closed by Close

	mu       sync.Mutex
	c        *conn
	changed  chan struct{}
	releases map[string]map[string]string
	err      error             // the verdict that ended supervision: *AbortError, *LostError, *RefusedError
	done     chan struct{}     // closed when err is set
	ended    bool              // rank 0 said it is done: no more supervision
	lastSeen time.Time         // the last message from rank 0
	dropped  string            // why the connection to rank 0 dropped, while reconnecting
	pending  string            // the phase being waited for, re-announced after a reconnect
	pendData map[string]string // what was said on arriving at it
	failure  *message          // this worker's failure, sent again after a reconnect
	closed   bool
	hint     string // last good leader address
	hintFn   func(rank int) string

	parent int     // the rank this worker connects to: 0, or its group's relay
	sub    *Leader // a relay's side towards its group, else nil
}

// Join connects to the leader, retrying with backoff until ctx is done: workers start at
// once, rank 0 may be later. addrHint, if not nil, is asked on every round for an address of
// the parent rank to try before the port range (rank 0 and relays publish their address in
// the job folder when there is a shared directory). Once joined, a dropped connection is
// re-established within the lost timeout, or the worker ends with a *LostError (see Done).
//
// In a job of more than Config.FanOut workers, a worker connects to its group's relay, and
// a relay (the first rank of each group) also listens for its group: it gathers the group's
// arrivals before it arrives itself, passes releases and aborts down, and takes its group's
// failures and losses to rank 0.
func Join(ctx context.Context, cfg Config, addrHint func(rank int) string) (*Worker, error) {
	w := &Worker{cfg: cfg, instance: nonce(), warn: newLimiter(10*time.Second, cfg.now), quit: make(chan struct{}),
		changed: make(chan struct{}), releases: map[string]map[string]string{}, done: make(chan struct{}), hintFn: addrHint,
		parent: cfg.Parent(cfg.Rank)}
	if cfg.IsRelay(cfg.Rank) {
		ln, err := listenOn(cfg.Ports)
		if err != nil {
			return nil, err
		}
		w.sub = serveOn(cfg, ln, cfg.Rank, w.escalate)
		if cfg.Publish != nil {
			cfg.Publish(cfg.Rank, w.sub.Addr)
		}
	}
	c, err := w.connect(ctx)
	if err != nil {
		if w.sub != nil {
			w.sub.Abort(err.Error(), 1)
			w.sub.Close()
		}
		return nil, err
	}
	w.c, w.lastSeen = c, cfg.now()
	go w.read(c)
	go w.beats()
	return w, nil
}

func (w *Worker) candidates() []string {
	var out []string
	if w.hintFn != nil {
		if h := w.hintFn(w.parent); h != "" {
			w.hint = h
		}
	}
	if w.hint != "" {
		out = append(out, w.hint)
	}
	host := w.cfg.addrOf(w.parent)
	for _, p := range w.cfg.Ports {
		a := net.JoinHostPort(host, strconv.Itoa(p))
		if a != w.hint {
			out = append(out, a)
		}
	}
	return out
}

// connect dials the candidates until one is this job's leader, with backoff. A refusal
// (another process holds this rank) ends it at once with a *RefusedError.
func (w *Worker) connect(ctx context.Context) (*conn, error) {
	log := w.cfg.logger()
	redial := admit.Redial{Backoff: 50 * time.Millisecond, Max: 2 * time.Second}
	var last error
	lastLog := time.Now()
	for {
		dropped := false
		for _, addr := range w.candidates() {
			c, err := w.handshake(ctx, addr)
			if err == nil {
				w.hint = addr
				return c, nil
			}
			var re *RefusedError
			if errors.As(err, &re) {
				return nil, err
			}
			var de *dropError
			if errors.As(err, &de) {
				dropped = true
			}
			if last == nil || !isDialError(err) { // what answered says more than what did not
				last = fmt.Errorf("%s: %w", addr, err)
			}
			var ae *authError
			if errors.As(err, &ae) {
				w.warn.warn(log, "auth:"+ae.kind(), "job channel: not this job's channel", "addr", addr, "why", ae.why)
			}
		}
		if time.Since(lastLog) >= w.cfg.every() {
			lastLog = time.Now()
			log.Info(fmt.Sprintf("job channel: waiting for rank %d (%s) to listen", w.parent, w.cfg.host(w.parent)), "last", last)
		}
		wait := redial.Next(dropped) // dropped: the parent is there, strangers crowd its gate
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("job channel: could not reach rank %d (%s) on ports %d-%d before the deadline: %v",
				w.parent, w.cfg.host(w.parent), w.cfg.Ports[0], w.cfg.Ports[len(w.cfg.Ports)-1], last)
		case <-w.quit:
			return nil, errors.New("job channel: closed")
		case <-time.After(wait):
		}
	}
}

// dropError is a connection that ended, or timed out, after it was made and before the
// welcome: the parent may have dropped it to make room.
type dropError struct{ err error }

func (e *dropError) Error() string { return "dropped before the handshake ended: " + e.err.Error() }
func (e *dropError) Unwrap() error { return e.err }

// isDialError reports that err is a failure to connect at all.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// handshake: the leader's hello and nonce, our join with our nonce, then welcome (or
// refuse) in the session of both nonces, bound to our rank.
func (w *Worker) handshake(ctx context.Context, addr string) (*conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := newConn(nc, w.cfg.Secret, w.cfg.Job)
	hello, err := c.recv(time.Now().Add(handshakeTimeout)) // the parent says hello as it accepts
	if err == nil && hello.Type != msgHello {
		err = &authError{"expected hello"}
	}
	if err != nil {
		nc.Close()
		return nil, dropped(err)
	}
	c.session = hello.Session
	mine := nonce()
	host, pid := self()
	if err := c.send(message{Type: msgJoin, Rank: w.cfg.Rank, Host: host, PID: pid, Instance: w.instance, Nonce: mine}, ioTimeout); err != nil {
		nc.Close()
		return nil, dropped(err)
	}
	c.bind(w.cfg.Rank, hello.Session, mine)
	reply, err := c.recv(time.Now().Add(ioTimeout))
	switch {
	case err != nil:
	case reply.Type == msgRefuse:
		err = &RefusedError{Reason: reply.Reason}
	case reply.Type != msgWelcome:
		err = &authError{"expected welcome"}
	}
	if err != nil {
		nc.Close()
		return nil, dropped(err)
	}
	_ = nc.SetReadDeadline(time.Time{})
	return c, nil
}

// dropped marks an error of a made connection as a drop, unless it says who the peer is
// (an authentication failure, a refusal).
func dropped(err error) error {
	var ae *authError
	var re *RefusedError
	if errors.As(err, &ae) || errors.As(err, &re) {
		return err
	}
	return &dropError{err}
}

func (w *Worker) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// endLocked records the verdict that ends supervision (the first one wins); a relay
// passes it on to its group.
func (w *Worker) endLocked(err error) {
	if w.err != nil {
		return
	}
	w.err = err
	close(w.done)
	var le *LostError
	if errors.As(err, &le) && w.c != nil {
		w.c.c.Close()
	}
	if w.sub != nil {
		reason, code := err.Error(), 1
		var ae *AbortError
		if errors.As(err, &ae) {
			reason, code = ae.Reason, ae.Code
		}
		go w.sub.Abort(reason, code)
	}
	w.notify()
}

// escalate takes a failure or loss in a relay's group to rank 0, whole (rank 0 does not
// prefix it with the relay's rank). If rank 0 cannot be told, the group is aborted here.
func (w *Worker) escalate(reason string, code int) {
	w.mu.Lock()
	c, ended := w.c, w.ended || w.closed
	w.mu.Unlock()
	if c == nil || ended {
		w.sub.Abort(reason, code)
		return
	}
	if err := c.send(message{Type: msgFail, Reason: TruncateReason(reason), Data: map[string]string{"exitCode": strconv.Itoa(code), "relayed": "1"}}, ioTimeout); err != nil {
		w.sub.Abort(reason, code)
	}
}

// read handles the leader's messages; a dropped connection is re-established within the
// lost timeout of the last message from rank 0.
func (w *Worker) read(c *conn) {
	for {
		m, err := c.recv(time.Time{})
		if err != nil {
			c.c.Close()
			w.mu.Lock()
			if w.closed || w.ended || w.err != nil {
				w.mu.Unlock()
				return
			}
			w.dropped = "connection closed"
			if err.Error() != "EOF" {
				w.dropped = err.Error()
			}
			deadline := w.lastSeen.Add(w.cfg.LostTimeout())
			w.mu.Unlock()
			w.warn.warn(w.cfg.logger(), "drop", fmt.Sprintf("job channel: lost the connection to rank %d (%s); reconnecting", w.parent, w.cfg.host(w.parent)),
				"err", err, "until", deadline.UTC().Format(time.RFC3339))
			rctx, cancel := context.WithDeadline(context.Background(), deadline)
			nc, cerr := w.connect(rctx)
			cancel()
			w.mu.Lock()
			if cerr != nil {
				var re *RefusedError
				if !errors.As(cerr, &re) && !w.closed {
					cerr = &LostError{Rank: w.parent, Host: w.cfg.host(w.parent), LastSeen: w.lastSeen,
						Why: fmt.Sprintf("%s and not back within %s", w.dropped, w.cfg.LostTimeout())}
				}
				if !w.closed {
					w.endLocked(cerr)
				}
				w.mu.Unlock()
				return
			}
			if w.err != nil || w.closed { // too late: the verdict is in
				w.mu.Unlock()
				nc.c.Close()
				return
			}
			w.c, w.dropped, w.lastSeen = nc, "", w.cfg.now()
			pending, pendData, failure := w.pending, w.pendData, w.failure
			w.mu.Unlock()
			if failure != nil { // it may have been lost with the old connection
				_ = nc.send(*failure, ioTimeout)
			}
			if pending != "" {
				_ = nc.send(message{Type: msgArrive, Phase: pending, Data: pendData}, ioTimeout)
			}
			c = nc
			continue
		}
		w.mu.Lock()
		w.lastSeen = w.cfg.now()
		switch m.Type {
		case msgRelease:
			w.releases[m.Phase] = m.Data
			if w.sub != nil {
				go w.sub.releaseNow(m.Phase, m.Data)
			}
		case msgAbort:
			code, _ := strconv.Atoi(m.Data["exitCode"])
			w.endLocked(&AbortError{Reason: m.Reason, Code: code})
		case msgEnd:
			w.ended = true
			if w.sub != nil {
				go w.sub.Close()
			}
		}
		w.notify()
		w.mu.Unlock()
	}
}

// checkArrivalData refuses arrival data that would not fit one message.
func checkArrivalData(data map[string]string) error {
	total := 0
	for k, v := range data {
		if len(v) > maxValue {
			return fmt.Errorf("the value of %q is %d bytes; at most %d fit", k, len(v), maxValue)
		}
		total += len(k) + len(v) + 6 // quotes, colon, comma
	}
	if total > maxMessage-4<<10 { // room for the message's other fields
		return fmt.Errorf("%d bytes of arrival data (%d keys) do not fit one message of %d bytes", total, len(data), maxMessage)
	}
	return nil
}

// Wait announces that this node reached phase and blocks until rank 0 releases it (its
// data), aborts the job (*AbortError), is lost (*LostError), or ctx ends.
func (w *Worker) Wait(ctx context.Context, phase string) (map[string]string, error) {
	return w.WaitWith(ctx, phase, nil)
}

// WaitWith is Wait, telling rank 0 data as this node arrives (Leader.Gather returns it,
// merged with the other nodes'): keys "<name>.<rank>" with this node's rank (rank 0 drops
// any other: no node answers for another; a relay passes its group's on), values of at
// most 4 KiB, at most 4 keys per node over the job, and all of it, with a relay's group's,
// within one message (64 KiB).
func (w *Worker) WaitWith(ctx context.Context, phase string, data map[string]string) (map[string]string, error) {
	var said map[string]string
	if w.sub != nil { // a relay arrives once its whole group has, with what they said
		if err := w.sub.gather(ctx, phase); err != nil {
			if verdict := w.Err(); verdict != nil {
				return nil, verdict
			}
			return nil, err
		}
		said = w.sub.arrivals(phase)
	}
	for k, v := range data {
		if said == nil {
			said = map[string]string{}
		}
		said[k] = v
	}
	if err := checkArrivalData(said); err != nil {
		return nil, fmt.Errorf("barrier %s: %w", phase, err)
	}
	w.mu.Lock()
	w.pending, w.pendData = phase, said
	c := w.c
	w.mu.Unlock()
	if err := c.send(message{Type: msgArrive, Phase: phase, Data: said}, ioTimeout); err != nil {
		w.cfg.logger().Warn("job channel: could not announce arrival; will retry after reconnecting", "err", err)
	}
	tick := time.NewTicker(w.cfg.every())
	defer tick.Stop()
	start := time.Now()
	for {
		w.mu.Lock()
		data, ok := w.releases[phase]
		verdict, ended, closed, changed := w.err, w.ended, w.closed, w.changed
		w.mu.Unlock()
		switch {
		case verdict != nil:
			return nil, verdict
		case ok:
			return data, nil
		case ended:
			return nil, fmt.Errorf("barrier %s: rank 0 (%s) ended the job without releasing it", phase, w.cfg.host(0))
		case closed:
			return nil, errors.New("job channel: closed")
		}
		select {
		case <-changed:
		case <-tick.C:
			w.cfg.logger().Info(fmt.Sprintf("barrier %s: waiting for rank %d (%s) for %s", phase, w.parent, w.cfg.host(w.parent), time.Since(start).Round(time.Second)))
		case <-ctx.Done():
			return nil, fmt.Errorf("barrier %s: timed out waiting for rank %d (%s)", phase, w.parent, w.cfg.host(w.parent))
		}
	}
}

// Fail tells rank 0 that this node failed, so that it aborts the job for everyone. what
// completes "rank R (host) …", e.g. "failed benchmark B: exited with code 1"; it is cut
// to MaxReason (the caller keeps the whole text in its status and log).
func (w *Worker) Fail(what string, code int) error {
	m := message{Type: msgFail, Reason: TruncateReason(what), Data: map[string]string{"exitCode": strconv.Itoa(code)}}
	w.mu.Lock()
	c, ended := w.c, w.ended
	w.failure = &m
	w.mu.Unlock()
	if ended {
		return fmt.Errorf("job channel: rank 0 (%s) already ended the job", w.cfg.host(0))
	}
	return c.send(m, ioTimeout)
}

// Done is closed when supervision ends with a verdict: rank 0 aborted the job, rank 0 is
// lost, or this worker was refused. Err says which.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Err is the verdict once Done is closed, else nil.
func (w *Worker) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Finish waits, on a relay, until every rank of its group has finished (or is lost, or the
// job is aborted), or ctx ends; on other workers it returns at once.
func (w *Worker) Finish(ctx context.Context) {
	if w.sub != nil {
		w.sub.Finish(ctx) // returns when rank 0 ends the job too: the sub-leader is closed then
	}
}

// Close says goodbye to the leader and drops the connection; a relay first tells its group
// that it is done.
func (w *Worker) Close() error {
	if w.sub != nil {
		w.mu.Lock()
		verdict, ended := w.err, w.ended
		w.mu.Unlock()
		if !ended { // leaving before rank 0 ended the job: the group must stop, not carry on
			reason, code := fmt.Sprintf("relay rank %d (%s) left the job", w.cfg.Rank, w.cfg.host(w.cfg.Rank)), 1
			var ae *AbortError
			switch {
			case errors.As(verdict, &ae):
				reason, code = ae.Reason, ae.Code
			case verdict != nil:
				reason = verdict.Error()
			}
			w.sub.Abort(reason, code)
		}
		w.sub.Close()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	close(w.quit)
	w.notify()
	if w.c != nil {
		_ = w.c.send(message{Type: msgBye}, time.Second)
		return w.c.c.Close()
	}
	return nil
}

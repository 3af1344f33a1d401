package jobchan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is shared by the leader (rank 0) and the workers.
type Config struct {
	Job    string   // job id with attempt, e.g. "1234.0": other jobs' messages are rejected
	Rank   int      //
	World  int      //
	Hosts  []string // host of each rank, for messages
	Secret []byte   // per-job secret for the HMACs
	Master string   // rank 0's address (host name or IP)
	Ports  []int    // the job's port range; the leader binds the first free one
	// LogEvery is how often a waiting side logs who it waits for (default 5 s).
	LogEvery time.Duration
	Log      *slog.Logger
}

func (c *Config) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

func (c *Config) every() time.Duration {
	if c.LogEvery > 0 {
		return c.LogEvery
	}
	return 5 * time.Second
}

func (c *Config) host(rank int) string {
	if rank >= 0 && rank < len(c.Hosts) {
		return c.Hosts[rank]
	}
	return "rank " + strconv.Itoa(rank)
}

const ioTimeout = 10 * time.Second

// AbortError is the reason rank 0 gave for aborting the job, and the exit code it asks for.
type AbortError struct {
	Reason string
	Code   int
}

func (e *AbortError) Error() string { return "job aborted by rank 0: " + e.Reason }

// ExitCode is the code every node exits with (e.g. 2 when rank 0's build failed).
func (e *AbortError) ExitCode() int {
	if e.Code == 0 {
		return 1
	}
	return e.Code
}

// Leader is rank 0's side of the barrier.
type Leader struct {
	cfg  Config
	ln   net.Listener
	Addr string // host:port the leader listens on

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever arrivals change
	conns    map[int]*conn
	lost     map[int]string // rank -> why its connection dropped (until it reconnects)
	left     map[int]bool   // ranks that said goodbye
	arrived  map[string]map[int]bool
	released map[string]map[string]string
	aborted  string
	code     int
	closed   bool
}

// Listen binds the first free port of cfg.Ports and starts accepting workers.
func Listen(cfg Config) (*Leader, error) {
	if len(cfg.Ports) == 0 {
		return nil, errors.New("barrier: no ports to listen on")
	}
	var ln net.Listener
	var errs []string
	for _, p := range cfg.Ports {
		l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p)))
		if err == nil {
			ln = l
			break
		}
		errs = append(errs, err.Error())
	}
	if ln == nil {
		return nil, fmt.Errorf("barrier: no free port in %d-%d (open them in the firewall between nodes, or set MASTER_PORT): %s",
			cfg.Ports[0], cfg.Ports[len(cfg.Ports)-1], strings.Join(errs, "; "))
	}
	port := ln.Addr().(*net.TCPAddr).Port
	l := &Leader{cfg: cfg, ln: ln, Addr: net.JoinHostPort(cfg.Master, strconv.Itoa(port)), changed: make(chan struct{}),
		conns: map[int]*conn{}, lost: map[int]string{}, left: map[int]bool{}, arrived: map[string]map[int]bool{}, released: map[string]map[string]string{}}
	go l.accept()
	return l, nil
}

func (l *Leader) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.serve(c)
	}
}

func (l *Leader) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// serve runs one worker connection: handshake, then arrivals until it closes.
func (l *Leader) serve(nc net.Conn) {
	log := l.cfg.logger()
	peer := nc.RemoteAddr().String()
	c := newConn(nc, l.cfg.Secret, l.cfg.Job)
	c.session = nonce()
	defer nc.Close()
	if err := c.send(message{Type: msgHello}, ioTimeout); err != nil {
		return
	}
	m, err := c.recv(time.Now().Add(ioTimeout))
	if err != nil {
		var ae *authError
		if errors.As(err, &ae) {
			log.Warn("barrier: rejected a connection", "peer", peer, "why", ae.why)
		}
		return
	}
	if m.Type != msgJoin || m.Rank < 1 || m.Rank >= l.cfg.World {
		log.Warn("barrier: rejected a join", "peer", peer, "type", m.Type, "rank", m.Rank)
		return
	}
	rank := m.Rank
	l.mu.Lock()
	if old := l.conns[rank]; old != nil {
		log.Info("barrier: a worker reconnected; dropping its old connection", "host", l.cfg.host(rank), "rank", rank)
		old.c.Close()
	}
	l.conns[rank] = c
	delete(l.lost, rank)
	aborted, code := l.aborted, l.code
	l.notify()
	l.mu.Unlock()
	if err := c.send(message{Type: msgWelcome}, ioTimeout); err != nil {
		return
	}
	if aborted != "" {
		_ = c.send(message{Type: msgAbort, Reason: aborted, Data: map[string]string{"exitCode": strconv.Itoa(code)}}, ioTimeout)
	}
	for {
		m, err := c.recv(time.Time{})
		if err != nil {
			var ae *authError
			l.mu.Lock()
			if l.conns[rank] == c {
				delete(l.conns, rank)
				why := "connection closed"
				if errors.As(err, &ae) {
					why = ae.Error()
					log.Warn("barrier: rejected a message", "peer", peer, "host", l.cfg.host(rank), "why", ae.why)
				} else if !errors.Is(err, net.ErrClosed) && err.Error() != "EOF" {
					why = err.Error()
				}
				if !l.closed {
					l.lost[rank] = why
					log.Warn("barrier: lost a worker", "host", l.cfg.host(rank), "rank", rank, "why", why)
				}
				l.notify()
			}
			l.mu.Unlock()
			return
		}
		if m.Type == msgBye {
			l.mu.Lock()
			if l.conns[rank] == c {
				delete(l.conns, rank)
				l.left[rank] = true
				l.notify()
			}
			l.mu.Unlock()
			return
		}
		if m.Type == msgFail {
			code, _ := strconv.Atoi(m.Data["exitCode"])
			log.Error("barrier: a worker failed; aborting the job", "host", l.cfg.host(rank), "rank", rank, "reason", m.Reason)
			go l.Abort(fmt.Sprintf("%s (rank %d) failed: %s", l.cfg.host(rank), rank, m.Reason), code)
			continue
		}
		if m.Type != msgArrive || m.Phase == "" {
			continue
		}
		l.mu.Lock()
		if l.arrived[m.Phase] == nil {
			l.arrived[m.Phase] = map[int]bool{}
		}
		l.arrived[m.Phase][rank] = true
		data, done := l.released[m.Phase]
		l.notify()
		l.mu.Unlock()
		if done { // a worker that reconnected after the release gets it again
			_ = c.send(message{Type: msgRelease, Phase: m.Phase, Data: data}, ioTimeout)
		}
	}
}

// missing lists the workers that have not arrived at phase, and why if they were lost.
func (l *Leader) missing(phase string) []string {
	var out []string
	for r := 1; r < l.cfg.World; r++ {
		if l.arrived[phase][r] {
			continue
		}
		s := l.cfg.host(r)
		if why, ok := l.lost[r]; ok {
			s += " (lost: " + why + ")"
		} else if l.left[r] {
			s += " (left: it finished or failed)"
		} else if l.conns[r] == nil && phase != "" {
			s += " (never connected)"
		}
		out = append(out, s)
	}
	return out
}

// Release waits until every worker has arrived at phase, then releases them all with
// data. A phase is released once. Waiting ends with an error naming the missing nodes when
// ctx is done.
func (l *Leader) Release(ctx context.Context, phase string, data map[string]string) error {
	log := l.cfg.logger()
	tick := time.NewTicker(l.cfg.every())
	defer tick.Stop()
	for {
		l.mu.Lock()
		if _, done := l.released[phase]; done {
			l.mu.Unlock()
			return fmt.Errorf("barrier: phase %q was already released", phase)
		}
		if l.aborted != "" {
			l.mu.Unlock()
			return &AbortError{Reason: l.aborted, Code: l.code}
		}
		missing := l.missing(phase)
		if len(missing) == 0 {
			if data == nil {
				data = map[string]string{}
			}
			l.released[phase] = data
			conns := make([]*conn, 0, len(l.conns))
			for _, c := range l.conns {
				conns = append(conns, c)
			}
			l.mu.Unlock()
			l.broadcast(conns, message{Type: msgRelease, Phase: phase, Data: data})
			return nil
		}
		changed := l.changed
		joined := l.cfg.World - len(missing)
		l.mu.Unlock()
		select {
		case <-changed:
		case <-tick.C:
			log.Info(fmt.Sprintf("barrier %s: joined %d/%d, waiting for: %s", phase, joined, l.cfg.World, short(missing)))
		case <-ctx.Done():
			return fmt.Errorf("barrier %s: timed out with %d/%d nodes; missing: %s", phase, joined, l.cfg.World, strings.Join(missing, ", "))
		}
	}
}

// short lists at most 10 names.
func short(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// broadcast sends m to every connection in parallel (a slow node must not delay the rest).
func (l *Leader) broadcast(conns []*conn, m message) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for _, c := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_ = c.send(m, ioTimeout)
		}()
	}
	wg.Wait()
}

// Abort tells every worker, now and any that joins later, that the job is aborted, and
// with which exit code they should end.
func (l *Leader) Abort(reason string, code int) {
	l.mu.Lock()
	if l.aborted != "" {
		l.mu.Unlock()
		return
	}
	l.aborted, l.code = reason, code
	conns := make([]*conn, 0, len(l.conns))
	for _, c := range l.conns {
		conns = append(conns, c)
	}
	l.notify()
	l.mu.Unlock()
	l.broadcast(conns, message{Type: msgAbort, Reason: reason, Data: map[string]string{"exitCode": strconv.Itoa(code)}})
}

// Aborted returns the abort reason, if the job was aborted.
func (l *Leader) Aborted() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.aborted, l.aborted != ""
}

// Connected returns the ranks currently connected, sorted.
func (l *Leader) Connected() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int, 0, len(l.conns))
	for r := range l.conns {
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}

// Close stops listening and closes every connection.
func (l *Leader) Close() error {
	l.mu.Lock()
	l.closed = true
	for _, c := range l.conns {
		c.c.Close()
	}
	l.mu.Unlock()
	return l.ln.Close()
}

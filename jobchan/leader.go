package jobchan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/admit"
)

// Leader is rank 0's side of the job channel.
type Leader struct {
	cfg  Config
	ln   net.Listener
	Addr string // host:port the leader listens on

	gate *admit.Gate // connections that have not authenticated yet
	warn *limiter
	quit chan struct{} // closed by Close: stops the accept and heartbeat loops

	self     int          // 0, or the relay rank this leader serves a group for
	children []int        // the ranks that connect here
	isChild  map[int]bool //
	// escalate, for a relay's group, takes a member's failure or loss to rank 0 instead of
	// aborting the group itself: rank 0 aborts the whole job, and the abort comes back.
	escalate func(reason string, code int)

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever arrivals change
	peers   map[int]*peer // connected workers
	seen    map[int]time.Time
	hostOf  map[int]string   // as each worker names itself
	dropped map[int]string   // rank -> why its connection dropped (until it reconnects)
	left    map[int]bool     // ranks that said goodbye
	lost    map[int]LostRank // ranks declared lost
	arrived map[string]map[int]bool
	// arrivalData is what the workers said as they arrived at a phase (WaitWith), merged:
	// each worker names its own keys (a relay passes on its group's with its own).
	arrivalData map[string]map[string]string
	arrivalKeys map[int]int // keys kept per rank they are about, over all phases
	released    map[string]map[string]string
	aborted     string
	code        int
	done        chan struct{} // closed on abort
	closed      bool
}

// peer is one connected worker.
type peer struct {
	c        *conn
	host     string
	pid      int
	instance string
	joined   time.Time
}

// LostRank is a worker rank 0 lost: silent for the lost timeout, or its connection dropped
// and it did not come back in that time.
type LostRank struct {
	Rank     int
	Host     string
	LastSeen time.Time
	Why      string
}

func (r LostRank) String() string {
	return fmt.Sprintf("lost rank %d (%s), last seen %s: %s", r.Rank, r.Host, r.LastSeen.UTC().Format(time.RFC3339), r.Why)
}

// Connections that have not authenticated yet wait in a gate (see internal/admit): at most
// admit.DefaultMax() at once (a quarter of the open-file limit, at most 4,096); one that
// spoke and is not through the handshake within handshakeTimeout is closed; when the gate
// is full, the oldest silent one (silent for firstByteTimeout), else the oldest slow one,
// of the address with the most waiting makes room. A worker answers the hello within a
// round trip, and redials at once when it is dropped before its welcome.
const firstByteTimeout = time.Second

func newGate(max int) *admit.Gate {
	return admit.New(admit.Config{Max: max, FirstByte: firstByteTimeout, Deadline: handshakeTimeout})
}

// Listen binds the first free port of cfg.Ports and starts accepting workers.
func Listen(cfg Config) (*Leader, error) {
	if len(cfg.Ports) == 0 {
		return nil, errors.New("job channel: no ports to listen on")
	}
	ln, err := listenOn(cfg.Ports)
	if err != nil {
		return nil, err
	}
	return serveOn(cfg, ln, 0, nil), nil
}

// listenOn binds the first free port of ports, for rank 0 or a relay.
func listenOn(ports []int) (net.Listener, error) {
	var errs []string
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p)))
		if err == nil {
			return l, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, fmt.Errorf("job channel: no free port in %d-%d (open them in the firewall between nodes, or set MASTER_PORT): %s",
		ports[0], ports[len(ports)-1], strings.Join(errs, "; "))
}

// serveOn starts a leader for rank self's children on a listener (tests pass one that
// fails).
func serveOn(cfg Config, ln net.Listener, self int, escalate func(string, int)) *Leader {
	port := ln.Addr().(*net.TCPAddr).Port
	l := &Leader{cfg: cfg, ln: ln, Addr: net.JoinHostPort(cfg.addrOf(self), strconv.Itoa(port)), changed: make(chan struct{}),
		self: self, children: cfg.children(self), isChild: map[int]bool{}, escalate: escalate,
		gate: newGate(cfg.gateMax), warn: newLimiter(10*time.Second, cfg.now), quit: make(chan struct{}),
		peers: map[int]*peer{}, seen: map[int]time.Time{}, hostOf: map[int]string{}, dropped: map[int]string{},
		left: map[int]bool{}, lost: map[int]LostRank{}, arrived: map[string]map[int]bool{}, arrivalData: map[string]map[string]string{}, arrivalKeys: map[int]int{},
		released: map[string]map[string]string{}, done: make(chan struct{})}
	for _, r := range l.children {
		l.isChild[r] = true
	}
	go l.accept()
	go l.heartbeats()
	return l
}

// accept takes connections until Close, continuously: each waits in the gate until it
// authenticates (nobody waits in the kernel's queue behind strangers). A failed Accept
// (EMFILE: the process is out of file descriptors; ECONNABORTED) is retried with backoff,
// never the end of the listener.
func (l *Leader) accept() {
	log := l.cfg.logger()
	backoff := 5 * time.Millisecond
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.warn.warn(log, "accept", "job channel: accepting a connection failed; retrying", "err", err, "retry", backoff.String())
			select {
			case <-time.After(backoff):
			case <-l.quit:
				return
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		select {
		case <-l.quit:
			nc.Close()
			return
		default:
		}
		go l.serve(l.gate.Admit(nc))
	}
}

func (l *Leader) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Leader) timeout() time.Duration { return l.cfg.LostTimeout() }

// handshake authenticates a new connection: hello with the leader's nonce, the worker's
// join with its nonce, then welcome or refuse. The gate may close the connection meanwhile
// (silent, slow, or making room); it lets go of it once the join is checked.
func (l *Leader) handshake(nc *admit.Conn) (*conn, message, bool) {
	log := l.cfg.logger()
	peerAddr := nc.RemoteAddr().String()
	c := newConn(nc, l.cfg.Secret, l.cfg.Job)
	c.session = nonce()
	if err := c.send(message{Type: msgHello}, handshakeTimeout); err != nil {
		return nil, message{}, false
	}
	m, err := c.recv(time.Time{}) // the gate bounds the wait
	if err != nil {
		var ae *authError
		if errors.As(err, &ae) {
			l.warn.warn(log, "reject:"+ae.kind(), "job channel: rejected a connection", "peer", peerAddr, "why", ae.why)
		}
		return nil, m, false
	}
	if m.Type != msgJoin || !l.isChild[m.Rank] || !validNonce(m.Nonce) || m.Instance == "" {
		l.warn.warn(log, "join", "job channel: rejected a join", "peer", peerAddr, "type", m.Type, "rank", m.Rank, "world", l.cfg.World, "servesFor", l.self)
		return nil, m, false
	}
	if !nc.Pass() { // closed by the gate just now
		return nil, m, false
	}
	c.bind(m.Rank, c.session, m.Nonce)
	return c, m, true
}

// serve runs one worker connection: handshake, then its messages until it closes.
func (l *Leader) serve(nc *admit.Conn) {
	defer nc.Close()
	log := l.cfg.logger()
	c, m, ok := l.handshake(nc)
	if !ok {
		return
	}
	_ = nc.SetReadDeadline(time.Time{})
	rank := m.Rank
	now := l.cfg.now()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	if old := l.peers[rank]; old != nil {
		if old.instance != m.Instance && now.Sub(l.seen[rank]) <= l.timeout() {
			reason := fmt.Sprintf("rank %d is already taken by %s (pid %d, joined %s); %s (pid %d) claims it too: each rank must be one process (srun --ntasks-per-node=1, one NODE_RANK per node)",
				rank, old.host, old.pid, old.joined.UTC().Format(time.RFC3339), m.Host, m.PID)
			l.mu.Unlock()
			l.warn.warn(log, "dup:"+strconv.Itoa(rank), "job channel: refused a second process for one rank", "rank", rank, "why", reason)
			_ = c.send(message{Type: msgRefuse, Reason: reason}, handshakeTimeout)
			return
		}
		if old.instance == m.Instance {
			log.Info("job channel: a worker reconnected; dropping its old connection", "host", m.Host, "rank", rank)
		} else {
			log.Warn("job channel: a new process took a silent rank", "rank", rank, "old", old.host, "new", m.Host)
		}
		old.c.c.Close()
	}
	if lr, ok := l.lost[rank]; ok { // too late: the job was aborted for it
		l.mu.Unlock()
		_ = c.send(message{Type: msgRefuse, Reason: lr.String() + "; the job was aborted"}, handshakeTimeout)
		return
	}
	l.peers[rank] = &peer{c: c, host: m.Host, pid: m.PID, instance: m.Instance, joined: now}
	l.seen[rank], l.hostOf[rank] = now, m.Host
	delete(l.dropped, rank)
	aborted, code := l.aborted, l.code
	l.notify()
	l.mu.Unlock()
	if err := c.send(message{Type: msgWelcome}, ioTimeout); err != nil {
		return
	}
	if aborted != "" {
		_ = c.send(abortMsg(aborted, code), ioTimeout)
	}
	for {
		m, err := c.recv(time.Time{})
		if err != nil {
			l.dropPeer(rank, c, err)
			return
		}
		l.mu.Lock()
		l.seen[rank] = l.cfg.now()
		l.mu.Unlock()
		switch m.Type {
		case msgBye:
			l.mu.Lock()
			if p := l.peers[rank]; p != nil && p.c == c {
				delete(l.peers, rank)
				l.left[rank] = true
				l.notify()
			}
			l.mu.Unlock()
			return
		case msgFail:
			code, _ := strconv.Atoi(m.Data["exitCode"])
			reason := m.Reason
			if m.Data["relayed"] != "1" { // a relay passes its group's failures on whole
				reason = fmt.Sprintf("rank %d (%s) %s", rank, l.cfg.host(rank), m.Reason)
			}
			log.Error("job channel: a worker failed; aborting the job", "host", l.cfg.host(rank), "rank", rank, "reason", reason)
			go l.failed(reason, code)
		case msgArrive:
			if m.Phase == "" {
				continue
			}
			l.mu.Lock()
			if l.arrived[m.Phase] == nil {
				l.arrived[m.Phase] = map[int]bool{}
			}
			l.arrived[m.Phase][rank] = true
			l.keepArrivalData(rank, m.Phase, m.Data)
			data, done := l.released[m.Phase]
			l.notify()
			l.mu.Unlock()
			if done { // a worker that reconnected after the release gets it again
				_ = c.send(message{Type: msgRelease, Phase: m.Phase, Data: data}, ioTimeout)
			}
		}
	}
}

// failed ends the job for a failure or a loss: rank 0 aborts it; a relay takes it to
// rank 0.
func (l *Leader) failed(reason string, code int) {
	if l.escalate != nil {
		l.escalate(reason, code)
		return
	}
	l.Abort(reason, code)
}

// dropPeer records that rank's connection c ended with err (it may reconnect).
func (l *Leader) dropPeer(rank int, c *conn, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.peers[rank]
	if p == nil || p.c != c {
		return
	}
	delete(l.peers, rank)
	why := "connection closed"
	var ae *authError
	if errors.As(err, &ae) {
		why = ae.Error()
		l.warn.warn(l.cfg.logger(), "msg:"+strconv.Itoa(rank), "job channel: rejected a message", "host", p.host, "rank", rank, "why", ae.why)
	} else if !errors.Is(err, net.ErrClosed) && err.Error() != "EOF" {
		why = err.Error()
	}
	if !l.closed {
		l.dropped[rank] = why
		l.cfg.logger().Warn("job channel: lost the connection to a worker", "host", p.host, "rank", rank, "why", why,
			"lostIn", l.timeout().String())
	}
	l.notify()
}

func abortMsg(reason string, code int) message {
	return message{Type: msgAbort, Reason: reason, Data: map[string]string{"exitCode": strconv.Itoa(code)}}
}

// missing lists the workers that have not arrived at phase, and why if they dropped.
func (l *Leader) missing(phase string) []string {
	var out []string
	for _, r := range l.children {
		if l.arrived[phase][r] {
			continue
		}
		s := l.cfg.host(r)
		if l.cfg.IsRelay(r) && l.self == 0 {
			s += fmt.Sprintf(" (relay for ranks %d-%d)", r, r+len(l.cfg.children(r)))
		}
		if why, ok := l.dropped[r]; ok {
			s += " (lost: " + why + ")"
		} else if l.left[r] {
			s += " (left: it finished or failed)"
		} else if l.peers[r] == nil && phase != "" {
			s += " (never connected)"
		}
		out = append(out, s)
	}
	return out
}

// Release waits until every worker has arrived at phase, then releases them all with
// data. A phase is released once. Waiting ends with an error naming the missing nodes when
// ctx is done, and with an *AbortError when the job is aborted.
func (l *Leader) Release(ctx context.Context, phase string, data map[string]string) error {
	if err := l.gather(ctx, phase); err != nil {
		return err
	}
	l.releaseNow(phase, data)
	return nil
}

// Gather waits, as Release does, until every worker has arrived at phase, and returns what
// they said as they arrived (Worker.WaitWith; merged, each worker with keys of its own),
// without releasing it: rank 0 decides the release's data from it, then calls Release.
func (l *Leader) Gather(ctx context.Context, phase string) (map[string]string, error) {
	if err := l.gather(ctx, phase); err != nil {
		return nil, err
	}
	return l.arrivals(phase), nil
}

// arrivals is a copy of what the workers said as they arrived at phase.
func (l *Leader) arrivals(phase string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.arrivalData[phase]))
	for k, v := range l.arrivalData[phase] {
		out[k] = v
	}
	return out
}

// keepArrivalData keeps what rank said on arriving at phase: only keys "<name>.<r>" that it
// may speak for (r is rank itself, or a member of the group rank relays for), so that no
// worker can answer for another; and at most 4 keys per worker over the whole job, so that
// the memory they take is bounded, and no worker uses up another's share. l.mu is held.
func (l *Leader) keepArrivalData(rank int, phase string, data map[string]string) {
	const limit = 4
	for k, v := range data {
		i := strings.LastIndexByte(k, '.')
		r, err := strconv.Atoi(k[i+1:])
		if i < 0 || err != nil || !(r == rank || l.cfg.IsRelay(rank) && r > rank && l.cfg.Parent(r) == rank) {
			l.warn.warn(l.cfg.logger(), "arrival-key", "job channel: dropped arrival data a worker may not give", "rank", rank, "key", truncate(k, 64))
			continue
		}
		if l.arrivalData[phase] == nil {
			l.arrivalData[phase] = map[string]string{}
		}
		if _, seen := l.arrivalData[phase][k]; !seen {
			if l.arrivalKeys[r] >= limit {
				l.warn.warn(l.cfg.logger(), "arrival-bound", "job channel: dropped arrival data beyond the bound of 4 keys per rank", "rank", rank, "about", r)
				continue
			}
			l.arrivalKeys[r]++
		}
		l.arrivalData[phase][k] = v
	}
}

// gather waits until every child has arrived at phase (see Release).
func (l *Leader) gather(ctx context.Context, phase string) error {
	log := l.cfg.logger()
	tick := time.NewTicker(l.cfg.every())
	defer tick.Stop()
	for {
		l.mu.Lock()
		if _, done := l.released[phase]; done {
			l.mu.Unlock()
			return fmt.Errorf("job channel: phase %q was already released", phase)
		}
		if l.aborted != "" {
			l.mu.Unlock()
			return &AbortError{Reason: l.aborted, Code: l.code}
		}
		arrived := 0 // counted on every change; the names only when they are told
		for _, r := range l.children {
			if l.arrived[phase][r] {
				arrived++
			}
		}
		if arrived == len(l.children) {
			l.mu.Unlock()
			return nil
		}
		for _, r := range l.children { // it will never arrive: no use waiting out the timeout
			if l.left[r] && !l.arrived[phase][r] {
				l.mu.Unlock()
				return fmt.Errorf("barrier %s: %s (rank %d) left the job before it arrived", phase, l.cfg.host(r), r)
			}
		}
		changed := l.changed
		joined, total := arrived+1, len(l.children)+1
		l.mu.Unlock()
		missing := func() string {
			l.mu.Lock()
			defer l.mu.Unlock()
			return short(l.missing(phase))
		}
		what := "barrier " + phase
		if l.self != 0 {
			what += fmt.Sprintf(" (group of rank %d)", l.self)
		}
		select {
		case <-changed:
		case <-tick.C:
			log.Info(fmt.Sprintf("%s: joined %d/%d, waiting for: %s", what, joined, total, missing()))
		case <-ctx.Done():
			return fmt.Errorf("%s: timed out with %d/%d nodes; missing: %s", what, joined, total, missing())
		}
	}
}

// releaseNow releases phase to every child with data (once).
func (l *Leader) releaseNow(phase string, data map[string]string) {
	if data == nil {
		data = map[string]string{}
	}
	l.mu.Lock()
	if _, done := l.released[phase]; done {
		l.mu.Unlock()
		return
	}
	l.released[phase] = data
	conns := l.connsLocked()
	l.mu.Unlock()
	l.broadcast(conns, message{Type: msgRelease, Phase: phase, Data: data}, ioTimeout)
}

func (l *Leader) connsLocked() []*conn {
	conns := make([]*conn, 0, len(l.peers))
	for _, p := range l.peers {
		conns = append(conns, p.c)
	}
	return conns
}

// short lists at most 10 names.
func short(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// broadcast sends m to every connection in parallel (a slow node must not delay the rest).
func (l *Leader) broadcast(conns []*conn, m message, timeout time.Duration) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for _, c := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_ = c.send(m, timeout)
		}()
	}
	wg.Wait()
}

// Abort tells every worker, now and any that joins later, that the job is aborted, and
// with which exit code they should end. The first abort wins. The reason is cut to
// MaxReason for the wire; Err keeps it whole.
func (l *Leader) Abort(reason string, code int) {
	if reason == "" { // "" means not aborted
		reason = "aborted (no reason given)"
	}
	l.mu.Lock()
	if l.aborted != "" {
		l.mu.Unlock()
		return
	}
	l.aborted, l.code = reason, code
	conns := l.connsLocked()
	close(l.done)
	l.notify()
	l.mu.Unlock()
	l.broadcast(conns, abortMsg(reason, code), ioTimeout)
}

// Done is closed when the job is aborted (by Abort, a worker's failure or a lost rank).
func (l *Leader) Done() <-chan struct{} { return l.done }

// Err is the *AbortError once Done is closed, else nil.
func (l *Leader) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.aborted == "" {
		return nil
	}
	return &AbortError{Reason: l.aborted, Code: l.code}
}

// Aborted returns the abort reason, if the job was aborted.
func (l *Leader) Aborted() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.aborted, l.aborted != ""
}

// Lost returns the ranks declared lost, by rank.
func (l *Leader) Lost() []LostRank {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LostRank, 0, len(l.lost))
	for _, r := range l.lost {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// Connected returns the ranks currently connected, sorted.
func (l *Leader) Connected() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int, 0, len(l.peers))
	for r := range l.peers {
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}

// Finish waits until every worker has said goodbye or is lost, the job is aborted, or ctx
// ends: rank 0 stays to supervise the workers still running.
func (l *Leader) Finish(ctx context.Context) {
	for {
		l.mu.Lock()
		left := 0
		for _, r := range l.children {
			if _, lost := l.lost[r]; l.left[r] || lost {
				left++
			}
		}
		changed, over := l.changed, l.aborted != "" || l.closed
		l.mu.Unlock()
		if over || left == len(l.children) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Close tells the workers still connected that rank 0 is done (so they do not take its
// going for a loss), stops listening and closes every connection.
func (l *Leader) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	conns := l.connsLocked()
	close(l.quit)
	l.notify()
	l.mu.Unlock()
	l.broadcast(conns, message{Type: msgEnd}, time.Second)
	for _, c := range conns {
		c.c.Close()
	}
	err := l.ln.Close()
	l.gate.Close()
	return err
}

package admit

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config bounds the connections a Gate holds.
type Config struct {
	Max       int           // connections waiting to authenticate, at most (0: DefaultMax())
	FirstByte time.Duration // a connection that sends nothing in this time is the first to go
	Deadline  time.Duration // one that spoke and is not through its handshake in this time is closed
}

// Gate holds a listener's connections until they authenticate.
type Gate struct {
	cfg     Config
	mu      sync.Mutex
	sources map[string][]*Conn // waiting connections by source address, oldest first
	n       int
	evicted int64
	closed  bool
}

// New makes a gate. Max of zero is DefaultMax(); times of zero are none.
func New(cfg Config) *Gate {
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax()
	}
	return &Gate{cfg: cfg, sources: map[string][]*Conn{}}
}

// Conn is a connection in the gate. Its first Read that returns bytes marks it heard; Pass
// takes it out of the gate (authenticated), Close closes it and takes it out.
type Conn struct {
	net.Conn
	g       *Gate
	src     string
	since   time.Time
	heard   atomic.Bool
	mu      sync.Mutex // guards out and the timer
	out     bool       // passed, closed or evicted
	timer   *time.Timer
	closeMu sync.Once
}

// Admit puts a freshly accepted connection in the gate, closing a waiting one first when
// the gate is full (see the package comment). After Close, it closes the connection.
func (g *Gate) Admit(nc net.Conn) *Conn {
	c := &Conn{Conn: nc, g: g, src: source(nc), since: time.Now()}
	var victim *Conn
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		c.out = true
		c.closeMu.Do(func() { nc.Close() })
		return c
	}
	if g.n >= g.cfg.Max {
		victim = g.pickLocked(g.busiestLocked(), c.since)
	}
	g.sources[c.src] = append(g.sources[c.src], c)
	g.n++
	g.mu.Unlock()
	if victim != nil {
		victim.evict()
	}
	if g.cfg.Deadline > 0 {
		c.mu.Lock()
		c.timer = time.AfterFunc(g.cfg.Deadline, func() {
			if c.heard.Load() { // spoke, and is not through: too slow
				c.evict()
			}
		})
		c.mu.Unlock()
	}
	return c
}

// Close closes every connection waiting in the gate, and every one admitted after.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	var all []*Conn
	for _, cs := range g.sources {
		all = append(all, cs...)
	}
	g.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
}

// DefaultMax is a quarter of the process's open-file limit, between 64 and 4,096: room to
// hold a few thousand strangers' connections rather than close and see them come back (a
// connection closed to make room is redialled at once, and waits in the kernel's queue in
// front of the real peers), and to leave the process most of its descriptors.
func DefaultMax() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 64
	}
	return int(min(max(lim.Cur/4, 64), 4096))
}

// Waiting is how many connections wait in the gate.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// Evicted is how many connections the gate closed (full, silent or too slow).
func (g *Gate) Evicted() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.evicted
}

// busiestLocked is the address with the most waiting connections.
func (g *Gate) busiestLocked() string {
	best, n := "", 0
	for s, cs := range g.sources {
		if len(cs) > n {
			best, n = s, len(cs)
		}
	}
	return best
}

// pickLocked takes the connection to close from src's: the oldest of those silent for
// more than FirstByte, else the oldest that spoke (slow), else the oldest.
func (g *Gate) pickLocked(src string, now time.Time) *Conn {
	cs := g.sources[src]
	if len(cs) == 0 {
		return nil
	}
	pick := -1
	for i, c := range cs { // oldest first
		heard := c.heard.Load()
		if !heard && now.Sub(c.since) > g.cfg.FirstByte { // silent: the first to go
			pick = i
			break
		}
		if heard && pick < 0 { // the oldest slow one, unless a silent one turns up
			pick = i
		}
	}
	v := cs[max(pick, 0)]
	g.removeLocked(v)
	return v
}

// removeLocked takes c out of its address's list.
func (g *Gate) removeLocked(c *Conn) bool {
	cs := g.sources[c.src]
	for i, x := range cs {
		if x == c {
			cs = append(cs[:i:i], cs[i+1:]...)
			if len(cs) == 0 {
				delete(g.sources, c.src)
			} else {
				g.sources[c.src] = cs
			}
			g.n--
			return true
		}
	}
	return false
}

// leave takes c out of the gate once: it returns false if it was out already.
func (c *Conn) leave() bool {
	c.mu.Lock()
	if c.out {
		c.mu.Unlock()
		return false
	}
	c.out = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	c.g.mu.Lock()
	c.g.removeLocked(c)
	c.g.mu.Unlock()
	return true
}

// evict closes a connection that waited too long, or made room for another.
func (c *Conn) evict() {
	c.mu.Lock()
	out := c.out
	c.out = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	if out {
		return
	}
	c.g.mu.Lock()
	c.g.removeLocked(c)
	c.g.evicted++
	c.g.mu.Unlock()
	c.closeMu.Do(func() { c.Conn.Close() })
}

// Read marks the connection heard at its first bytes.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.heard.Load() {
		c.heard.Store(true)
	}
	return n, err
}

// Pass takes an authenticated connection out of the gate: it is no longer bounded by the
// gate's Deadline, nor closed to make room. It reports false when the gate closed it
// already.
func (c *Conn) Pass() bool { return c.leave() }

// Close closes the connection and takes it out of the gate.
func (c *Conn) Close() error {
	c.leave()
	var err error
	c.closeMu.Do(func() { err = c.Conn.Close() })
	return err
}

// source is a connection's remote IP address (the whole remote address if it has none).
func source(nc net.Conn) string {
	a := nc.RemoteAddr()
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if a == nil {
		return ""
	}
	return a.String()
}

// Max is the most connections the gate holds.
func (g *Gate) Max() int { return g.cfg.Max }

package fanout

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchctl/benchctl/internal/admit"
)

// Receiver listens for a rank's predecessor. Listen before the image phase, so that
// the predecessor can connect as soon as it starts; then call Receive (or Close).
type Receiver struct {
	cfg      Config
	ln       net.Listener
	gate     *admit.Gate       // connections in a handshake (see internal/admit)
	upstream chan *link        // the predecessor's authenticated connection
	taken    atomic.Bool       // a predecessor was accepted: later ones are refused
	used     atomic.Bool       // Receive was called
	quit     chan struct{}     //
	once     sync.Once         //
	wg       sync.WaitGroup    // the accept loop and its handshakes
	mu       sync.Mutex        //
	pending  map[net.Conn]bool // connections in a handshake, closed by Close
	warned   map[string]time.Time
}

// Listen listens on the first free port of cfg.Ports for rank cfg.Rank (> 0).
func Listen(cfg Config) (*Receiver, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Rank == 0 {
		return nil, errors.New("image fan-out: rank 0 sends; it does not listen")
	}
	var ln net.Listener
	var errs []string
	for _, p := range cfg.Ports {
		if ln, err = net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p))); err == nil {
			break
		}
		errs = append(errs, err.Error())
	}
	if ln == nil {
		return nil, fmt.Errorf("image fan-out: rank %d: no free port in %d-%d: %s", cfg.Rank, cfg.Ports[0], cfg.Ports[len(cfg.Ports)-1], strings.Join(errs, "; "))
	}
	// The gate holds the connections in a handshake (see internal/admit): one that spoke and
	// is not through within HandshakeTimeout is closed; a silent one, while there is room.
	gate := admit.New(admit.Config{FirstByte: min(firstByte, cfg.HandshakeTimeout), Deadline: cfg.HandshakeTimeout})
	rc := &Receiver{cfg: cfg, ln: ln, gate: gate, upstream: make(chan *link, 1),
		quit: make(chan struct{}), pending: map[net.Conn]bool{}, warned: map[string]time.Time{}}
	rc.wg.Go(rc.accept)
	return rc, nil
}

// Port is the port the receiver listens on.
func (rc *Receiver) Port() int { return rc.ln.Addr().(*net.TCPAddr).Port }

// Close stops listening and ends the handshakes in progress; Receive calls it.
func (rc *Receiver) Close() error {
	rc.once.Do(func() {
		close(rc.quit)
		rc.ln.Close()
		rc.mu.Lock()
		for c := range rc.pending {
			c.Close()
		}
		rc.mu.Unlock()
		rc.wg.Wait()
		select {
		case l := <-rc.upstream: // accepted, never received
			l.nc.Close()
		default:
		}
	})
	return nil
}

// accept takes connections continuously, each into the gate until its handshake is done
// (nobody waits in the kernel's queue behind strangers); a failed Accept is retried with
// backoff.
func (rc *Receiver) accept() {
	backoff := 5 * time.Millisecond
	for {
		nc, err := rc.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			rc.warn("accept", "image fan-out: accepting a connection failed; retrying", "err", err)
			select {
			case <-time.After(backoff):
			case <-rc.quit:
				return
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		rc.mu.Lock()
		select {
		case <-rc.quit:
			nc.Close()
		default:
			gc := rc.gate.Admit(nc)
			rc.pending[gc] = true
			rc.wg.Go(func() { rc.handshake(gc) })
		}
		rc.mu.Unlock()
	}
}

// handshake authenticates a connection within HandshakeTimeout and hands it to Receive,
// or refuses it saying why (another rank, another job, busy) and closes it. The gate may
// close it meanwhile (silent, slow, or making room).
func (rc *Receiver) handshake(nc *admit.Conn) {
	keep := false
	defer func() {
		rc.mu.Lock()
		delete(rc.pending, nc)
		rc.mu.Unlock()
		if !keep {
			nc.Close()
		}
	}()
	cfg := rc.cfg
	_ = nc.SetWriteDeadline(time.Now().Add(cfg.HandshakeTimeout)) // the gate bounds the reads
	nonceL := newNonce()
	if _, err := nc.Write([]byte(helloPrefix + hexNonce(nonceL) + "\n")); err != nil {
		return
	}
	d, err := readDialMessage(nc, cfg.Secret, nonceL)
	var ne net.Error
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne):
		return // a probe (a job channel worker trying ports), a silent peer, a closed receiver
	case strings.HasPrefix(err.Error(), "not a fan-out"):
		rc.warn("garbage", "image fan-out: rejected a connection", "rank", cfg.Rank, "peer", nc.RemoteAddr().String(), "why", err)
		return
	default:
		rc.warn("dial:"+errKind(err), "image fan-out: rejected a connection", "rank", cfg.Rank, "peer", nc.RemoteAddr().String(), "why", err)
		refuse(nc, err.Error())
		return
	}
	var why string
	switch {
	case d.job != cfg.Job:
		why = fmt.Sprintf("this is job %q", cfg.Job)
	case d.to != cfg.Rank:
		why = fmt.Sprintf("this is rank %d", cfg.Rank)
	case d.from != cfg.Rank-1:
		why = fmt.Sprintf("rank %d receives from rank %d, not %d", cfg.Rank, cfg.Rank-1, d.from)
	case d.frame != cfg.FrameSize:
		why = fmt.Sprintf("frame size %d here, %d there (the same benchctl on every node?)", cfg.FrameSize, d.frame)
	case !rc.taken.CompareAndSwap(false, true):
		why = fmt.Sprintf("rank %d already receives from rank %d", cfg.Rank, cfg.Rank-1)
	}
	if why != "" {
		refuse(nc, why)
		return
	}
	reply := append([]byte{'A'}, d.mac(cfg.Secret, "benchctl fanout accept")...)
	if !nc.Pass() { // the gate closed it just now
		rc.taken.Store(false)
		return
	}
	if _, err := nc.Write(reply); err != nil {
		rc.taken.Store(false)
		return
	}
	_ = nc.SetDeadline(time.Time{})
	keep = true
	rc.upstream <- newLink(nc, d, cfg.Secret, false) // one slot, one taker
}

// refuse tells a dialer why not (at most 255 bytes; it is not authenticated: the dialer only
// moves on to the next port).
func refuse(nc net.Conn, why string) {
	why = why[:min(len(why), 255)]
	_, _ = nc.Write(append([]byte{'R', byte(len(why))}, why...))
}

// errKind is an error's text up to the first number or quote: a key for rate-limited
// warnings that a stranger cannot multiply.
func errKind(err error) string {
	s := err.Error()
	if i := strings.IndexAny(s, "0123456789\"("); i > 0 {
		return s[:i]
	}
	return s
}

// warn logs a warning of one kind at most every 10 s: a peer retrying in a loop, or a
// stranger, must not flood the job's log.
func (rc *Receiver) warn(kind, msg string, args ...any) {
	rc.mu.Lock()
	now := time.Now()
	if t, ok := rc.warned[kind]; ok && now.Sub(t) < 10*time.Second || len(rc.warned) > 64 {
		rc.mu.Unlock()
		return
	}
	rc.warned[kind] = now
	rc.mu.Unlock()
	rc.cfg.Log.Warn(msg, args...)
}

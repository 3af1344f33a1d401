package jobchan

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/agentwire"
)

// Streams are the job channel's point-to-point links for a remote command: rank 0's node
// dials another rank's StreamServer, both prove they hold the job's secret (each side a
// nonce, each an HMAC over the job, both ranks and both nonces), and every frame after
// that is signed under keys of that connection alone (agentwire.Conn.Sign), so a frame
// can be neither forged, altered, replayed nor moved to another link.

const kindHello byte = 'H'

// streamHello is the handshake's messages, one struct for the three of them.
type streamHello struct {
	V     int    `json:"v"`
	Job   string `json:"job,omitempty"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	Nonce string `json:"nonce,omitempty"`
	MAC   string `json:"mac,omitempty"`
}

const streamVersion = 1

// StreamServer accepts the job's authenticated stream links for one rank.
type StreamServer struct {
	Addr string // host:port it listens on, as other nodes reach it
	ln   net.Listener
	cfg  Config
	wg   sync.WaitGroup
	quit chan struct{}
	once sync.Once
}

// ListenStreams listens for stream links to cfg.Rank: on the first free port of cfg.Ports,
// else on any port. Each link that proves itself is handed to serve, in its own goroutine,
// with the dialing rank; serve owns it (and closes it).
func ListenStreams(cfg Config, serve func(from int, c *agentwire.Conn, nc net.Conn)) (*StreamServer, error) {
	var ln net.Listener
	err := errors.New("no port range")
	if len(cfg.Ports) > 0 {
		ln, err = listenOn(cfg.Ports)
	}
	if err != nil {
		if ln, err = net.Listen("tcp", ":0"); err != nil {
			return nil, fmt.Errorf("job channel: remote-launch links: %w", err)
		}
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s := &StreamServer{Addr: net.JoinHostPort(cfg.addrOf(cfg.Rank), strconv.Itoa(port)), ln: ln, cfg: cfg, quit: make(chan struct{})}
	s.wg.Add(1)
	go s.accept(serve)
	return s, nil
}

// maxPendingStreams bounds the links that have not proven themselves yet.
const maxPendingStreams = 64

func (s *StreamServer) accept(serve func(int, *agentwire.Conn, net.Conn)) {
	defer s.wg.Done()
	pending := make(chan struct{}, maxPendingStreams)
	log := s.cfg.logger()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || !errors.Is(err, net.ErrClosed) {
				time.Sleep(50 * time.Millisecond) // EMFILE and the like: try again
				continue
			}
			return
		}
		select {
		case pending <- struct{}{}:
		default:
			log.Warn("job channel: a remote-launch link refused: too many links waiting to authenticate", "from", nc.RemoteAddr().String())
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c, from, err := serverHandshake(s.cfg, nc)
			<-pending
			if err != nil {
				log.Warn("job channel: a remote-launch link refused", "from", nc.RemoteAddr().String(), "why", err.Error())
				nc.Close()
				return
			}
			serve(from, c, nc)
		}()
	}
}

// Close stops accepting; links being served go on (their servers end them).
func (s *StreamServer) Close() error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		err = s.ln.Close()
	})
	return err
}

// DialStream opens an authenticated stream link from cfg.Rank to rank to at addr.
func DialStream(ctx context.Context, cfg Config, to int, addr string) (*agentwire.Conn, net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	c, err := clientHandshake(cfg, to, nc)
	if !stop() || err != nil {
		nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, nil, fmt.Errorf("job channel: the remote-launch link to rank %d (%s): %w", to, addr, err)
	}
	return c, nc, nil
}

func streamMAC(secret []byte, what string, h streamHello, nc, ns string) []byte {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "benchctl stream %s\x00%s\x00%d\x00%d\x00%s\x00%s", what, h.Job, h.From, h.To, nc, ns)
	return m.Sum(nil)
}

func clientHandshake(cfg Config, to int, nc net.Conn) (*agentwire.Conn, error) {
	_ = nc.SetDeadline(time.Now().Add(ioTimeout))
	c := agentwire.NewConn(nc, nc)
	h := streamHello{V: streamVersion, Job: cfg.Job, From: cfg.Rank, To: to, Nonce: nonce()}
	if err := sendHello(c, h); err != nil {
		return nil, err
	}
	var ans streamHello
	if err := recvHello(c, &ans); err != nil {
		return nil, err
	}
	got, err := hex.DecodeString(ans.MAC)
	if err != nil || !hmac.Equal(got, streamMAC(cfg.Secret, "server", h, h.Nonce, ans.Nonce)) {
		return nil, errors.New("the other side does not hold this job's secret")
	}
	if err := sendHello(c, streamHello{V: streamVersion, MAC: hex.EncodeToString(streamMAC(cfg.Secret, "client", h, h.Nonce, ans.Nonce))}); err != nil {
		return nil, err
	}
	c.Sign(streamMAC(cfg.Secret, "c2s", h, h.Nonce, ans.Nonce), streamMAC(cfg.Secret, "s2c", h, h.Nonce, ans.Nonce))
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

func serverHandshake(cfg Config, nc net.Conn) (*agentwire.Conn, int, error) {
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	c := agentwire.NewConn(nc, nc)
	var h streamHello
	if err := recvHello(c, &h); err != nil {
		return nil, 0, err
	}
	switch {
	case h.V != streamVersion:
		return nil, 0, fmt.Errorf("protocol version %d, this benchctl speaks %d", h.V, streamVersion)
	case h.Job != cfg.Job:
		return nil, 0, fmt.Errorf("a link of job %q, not of this job (%s)", truncate(h.Job, 64), cfg.Job)
	case h.To != cfg.Rank:
		return nil, 0, fmt.Errorf("a link for rank %d, and this is rank %d", h.To, cfg.Rank)
	case h.From < 0 || h.From >= cfg.World || h.From == cfg.Rank:
		return nil, 0, fmt.Errorf("a link from rank %d, not another rank of this job of %d", h.From, cfg.World)
	case !validNonce(h.Nonce):
		return nil, 0, errors.New("a link without a nonce")
	}
	ns := nonce()
	if err := sendHello(c, streamHello{V: streamVersion, Nonce: ns, MAC: hex.EncodeToString(streamMAC(cfg.Secret, "server", h, h.Nonce, ns))}); err != nil {
		return nil, 0, err
	}
	var proof streamHello
	if err := recvHello(c, &proof); err != nil {
		return nil, 0, err
	}
	got, err := hex.DecodeString(proof.MAC)
	if err != nil || !hmac.Equal(got, streamMAC(cfg.Secret, "client", h, h.Nonce, ns)) {
		return nil, 0, errors.New("the dialer does not hold this job's secret")
	}
	c.Sign(streamMAC(cfg.Secret, "s2c", h, h.Nonce, ns), streamMAC(cfg.Secret, "c2s", h, h.Nonce, ns))
	_ = nc.SetDeadline(time.Time{})
	return c, h.From, nil
}

func sendHello(c *agentwire.Conn, h streamHello) error {
	b, _ := json.Marshal(h)
	return c.Send(kindHello, b)
}

func recvHello(c *agentwire.Conn, h *streamHello) error {
	kind, p, err := c.Recv()
	if err != nil {
		return err
	}
	if kind == agentwire.KindRefuse {
		return fmt.Errorf("refused: %s", truncate(string(p), 200))
	}
	if kind != kindHello || len(p) > 4<<10 {
		return errors.New("not a benchctl remote-launch link")
	}
	return json.Unmarshal(p, h)
}

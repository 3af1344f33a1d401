package fanout

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/benchctl/benchctl/internal/admit"
)

// refusal is a listener's refusal: another rank, another job, busy.
type refusal struct{ reason string }

func (e *refusal) Error() string { return "refused: " + e.reason }

// dialLink connects to addr and runs the dialer's side of the handshake for the link
// from cfg.Rank to rank to.
func dialLink(ctx context.Context, cfg Config, addr string, to int) (*link, error) {
	var nc net.Conn
	var err error
	if cfg.dial != nil {
		nc, err = cfg.dial(ctx, addr)
	} else {
		dl := net.Dialer{Timeout: dialTimeout}
		nc, err = dl.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	l, err := dialHandshake(nc, cfg, to)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if cfg.wrap != nil {
		l.nc = cfg.wrap(nc)
		l.br.Reset(l.nc)
	}
	return l, nil
}

func dialHandshake(nc net.Conn, cfg Config, to int) (*link, error) {
	_ = nc.SetDeadline(time.Now().Add(cfg.HandshakeTimeout))
	hello := make([]byte, helloLen)
	if _, err := io.ReadFull(nc, hello); err != nil {
		return nil, fmt.Errorf("no fan-out hello: %w", err)
	}
	d := &dialMessage{job: cfg.Job, from: cfg.Rank, to: to, frame: cfg.FrameSize, nonceD: newNonce()}
	if !strings.HasPrefix(string(hello), helloPrefix) || hello[len(hello)-1] != '\n' {
		return nil, errors.New("not a fan-out listener")
	}
	if n, err := hex.Decode(d.nonceL[:], hello[len(helloPrefix):len(hello)-1]); err != nil || n != 16 {
		return nil, errors.New("not a fan-out listener")
	}
	if _, err := nc.Write(d.marshal(cfg.Secret)); err != nil {
		return nil, err
	}
	var reply [1 + tagSize]byte
	if _, err := io.ReadFull(nc, reply[:1]); err != nil {
		return nil, err
	}
	switch reply[0] {
	case 'R':
		var n [1]byte
		if _, err := io.ReadFull(nc, n[:]); err != nil {
			return nil, err
		}
		why := make([]byte, n[0])
		_, _ = io.ReadFull(nc, why)
		return nil, &refusal{string(why)}
	case 'A':
		if _, err := io.ReadFull(nc, reply[1:]); err != nil {
			return nil, err
		}
		if !hmac.Equal(reply[1:], d.mac(cfg.Secret, "benchctl fanout accept")) {
			return nil, errors.New("the listener failed authentication (another job's secret?)")
		}
	default:
		return nil, errors.New("not a fan-out listener")
	}
	_ = nc.SetDeadline(time.Time{})
	return newLink(nc, d, cfg.Secret, true), nil
}

// connect finds the successor: every port of the range on its host, until a handshake says
// it is rank+1, with backoff until ConnectTimeout.
func (r *rankRun) connect() *link { return r.connectWithin(r.ctx, r.cfg.ConnectTimeout) }

// connectWithin is connect bounded by ctx and within; it gives up (nil) when ctx ends.
func (r *rankRun) connectWithin(ctx context.Context, within time.Duration) *link {
	next := r.cfg.Rank + 1
	host := r.cfg.Hosts[next]
	start := time.Now()
	until := start.Add(within)
	redial := admit.Redial{Backoff: 10 * time.Millisecond, Max: 500 * time.Millisecond}
	last := make([]string, len(r.cfg.Ports))
	answered := false // the host answered on some port, if only to refuse it
	for {
		dropped := false
		for i, p := range r.cfg.Ports {
			if ctx.Err() != nil {
				return nil
			}
			l, err := dialLink(ctx, r.cfg, net.JoinHostPort(host, strconv.Itoa(p)), next)
			if err == nil {
				if !r.setLink(&r.down, l) {
					return nil
				}
				r.cfg.Log.Debug("image fan-out: connected to the successor", "rank", r.cfg.Rank, "to", next, "port", p)
				return l
			}
			var op *net.OpError
			if last[i] == "" || !errors.As(err, &op) || op.Op != "dial" { // what answered says more than what did not
				last[i] = fmt.Sprintf("port %d: %v", p, err)
			}
			answered = answered || !noAnswer(err)
			dropped = dropped || droppedEarly(err)
		}
		if !answered && time.Since(start) >= r.cfg.SilentAfter && time.Now().Before(until) {
			r.failf(next, sideDown, nil, "rank %d got no answer at all from %s on ports %d-%d in %s: every connection timed out or found no route (a firewall between the nodes, or the host is down); open these ports between the nodes, or use distribution: cache (%s)",
				r.cfg.Rank, host, r.cfg.Ports[0], r.cfg.Ports[len(r.cfg.Ports)-1], r.cfg.SilentAfter, strings.Join(last, "; "))
			return nil
		}
		if time.Now().After(until) {
			r.failf(next, sideDown, nil, "rank %d could not reach it on %s ports %d-%d within %s (%s)", r.cfg.Rank, host,
				r.cfg.Ports[0], r.cfg.Ports[len(r.cfg.Ports)-1], within, strings.Join(last, "; "))
			return nil
		}
		t := time.NewTimer(redial.Next(dropped)) // dropped: strangers crowd the listener's gate
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// droppedEarly says whether a handshake's error is a connection made and then ended, or
// timed out, before the listener said who it is (a hello, a refusal, an acceptance).
func droppedEarly(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var re *refusal
	if errors.As(err, &re) {
		return false
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.As(err, &ne) && ne.Timeout()
}

// noAnswer says whether a dial error means that nothing answered: the connection timed out
// (dropped by a firewall, a host that is down) or there is no route to the host. A refused
// connection is an answer: the host is there, nobody listens on the port yet.
func noAnswer(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" { // connected: whatever failed after, it answered
		return false
	}
	return op.Timeout() || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

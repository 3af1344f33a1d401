package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
	"unsafe"

	"github.com/benchctl/benchctl/models/internal/example"
)

// segment is the most bytes sent or received under one I/O deadline.
const segment = 1 << 20

// ring is this rank's place in the ring: it sends to rank+1 and receives from rank-1.
type ring struct {
	rank, n    int
	next, prev net.Conn
	ioTimeout  time.Duration
	scratch    []float32 // a received segment, before it is added in
}

// setupRing opens this rank's ring listener, learns every rank's address from the
// rendezvous, connects to the next rank and accepts the previous one.
func setupRing(e example.NodeEnv, connectTimeout, ioTimeout time.Duration, logf logFunc) (*ring, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return nil, fmt.Errorf("opening the ring listener: %w", err)
	}
	defer ln.Close()
	table, err := rendezvous(e, ln.Addr().(*net.TCPAddr).Port, connectTimeout, logf)
	if err != nil {
		return nil, err
	}
	g := &ring{rank: e.Rank, n: e.NNodes, ioTimeout: ioTimeout, scratch: make([]float32, segment/4)}
	next, prev := (g.rank+1)%g.n, (g.rank+g.n-1)%g.n
	deadline := time.Now().Add(connectTimeout)
	ln.(*net.TCPListener).SetDeadline(deadline)
	accepted := make(chan error, 1)
	go func() {
		var err error
		g.prev, err = acceptPeer(ln, prev, g.n, logf)
		accepted <- err
	}()
	g.next, err = dialRetry(table[next], deadline, fmt.Sprintf("rank %d", next), logf)
	if err == nil {
		err = writeHello(g.next, g.rank, g.n)
	}
	if err != nil {
		err = fmt.Errorf("connecting to rank %d at %s: %w", next, table[next], err)
		ln.Close() // stops the accept
	}
	if aerr := <-accepted; err == nil {
		err = aerr
	}
	if err != nil {
		g.close()
		return nil, err
	}
	logf("ring connected: sending to rank %d at %s, receiving from rank %d", next, table[next], prev)
	return g, nil
}

// The ring hello is 12 bytes: "BCAR", the sender's rank and NNODES (big-endian uint32).
func writeHello(c net.Conn, rank, n int) error {
	b := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32([]byte("BCAR"), uint32(rank)), uint32(n))
	c.SetWriteDeadline(time.Now().Add(shortTimeout))
	_, err := c.Write(b)
	return err
}

// acceptPeer accepts connections until one says it is rank want.
func acceptPeer(ln net.Listener, want, n int, logf logFunc) (net.Conn, error) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil, fmt.Errorf("waiting for rank %d to connect: %w", want, err)
		}
		var b [12]byte
		c.SetReadDeadline(time.Now().Add(shortTimeout))
		_, err = io.ReadFull(c, b[:])
		rank, nn := int(binary.BigEndian.Uint32(b[4:])), int(binary.BigEndian.Uint32(b[8:]))
		if err == nil && (string(b[:4]) != "BCAR" || rank != want || nn != n) {
			err = fmt.Errorf("expected a hello from rank %d of %d, got %q", want, n, b[:])
		}
		if err == nil {
			return c, nil
		}
		logf("ignoring a ring connection from %s: %v", c.RemoteAddr(), err)
		c.Close()
	}
}

// close closes both ring connections.
func (g *ring) close() {
	for _, c := range []net.Conn{g.next, g.prev} {
		if c != nil {
			c.Close()
		}
	}
}

// chunk is the bounds of chunk c of a vector of length elements split n ways.
func chunk(length, n, c int) (lo, hi int) { return c * length / n, (c + 1) * length / n }

// allReduce sums v over all ranks, in place: a reduce-scatter, after which rank r holds
// the sum of chunk r+1, then an all-gather that passes the summed chunks round the ring.
func (g *ring) allReduce(v []float32) error {
	mod := func(x int) int { return ((x % g.n) + g.n) % g.n }
	for s := range g.n - 1 {
		if err := g.step(v, mod(g.rank-s), mod(g.rank-s-1), true); err != nil {
			return fmt.Errorf("reduce-scatter step %d: %w", s+1, err)
		}
	}
	for s := range g.n - 1 {
		if err := g.step(v, mod(g.rank+1-s), mod(g.rank-s), false); err != nil {
			return fmt.Errorf("all-gather step %d: %w", s+1, err)
		}
	}
	return nil
}

// barrier returns once every rank has called it: an all-reduce of one element per rank.
func (g *ring) barrier() error { return g.allReduce(make([]float32, g.n)) }

// step sends chunk send to the next rank while it receives chunk recv from the previous
// one, adding it in (reduce) or overwriting. On an error it closes both connections, so
// that neither direction waits out its deadline.
func (g *ring) step(v []float32, send, recv int, reduce bool) error {
	slo, shi := chunk(len(v), g.n, send)
	rlo, rhi := chunk(len(v), g.n, recv)
	sent := make(chan error, 1)
	go func() {
		err := g.send(v[slo:shi])
		if err != nil {
			g.prev.Close()
		}
		sent <- err
	}()
	rerr := g.receive(v[rlo:rhi], reduce)
	if rerr != nil {
		g.next.Close()
	}
	serr := <-sent
	switch {
	case rerr != nil && (serr == nil || !errors.Is(rerr, net.ErrClosed)): // not just closed by the sender
		return peerError("receiving from", (g.rank+g.n-1)%g.n, rerr)
	case serr != nil:
		return peerError("sending to", (g.rank+1)%g.n, serr)
	}
	return nil
}

func (g *ring) send(v []float32) error {
	for b := asBytes(v); len(b) > 0; {
		k := min(len(b), segment)
		g.next.SetWriteDeadline(time.Now().Add(g.ioTimeout))
		if _, err := g.next.Write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

func (g *ring) receive(v []float32, reduce bool) error {
	for len(v) > 0 {
		dst := v[:min(len(v), segment/4)]
		buf := dst
		if reduce {
			buf = g.scratch[:len(dst)]
		}
		g.prev.SetReadDeadline(time.Now().Add(g.ioTimeout))
		if _, err := io.ReadFull(g.prev, asBytes(buf)); err != nil {
			return err
		}
		if reduce {
			for i, x := range buf {
				dst[i] += x
			}
		}
		v = v[len(dst):]
	}
	return nil
}

func peerError(op string, peer int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s rank %d: connection closed (did rank %d fail?)", op, peer, peer)
	}
	return fmt.Errorf("%s rank %d: %w", op, peer, err)
}

// asBytes views v's memory as bytes, without a copy, so the vector goes on the wire in the
// machine's byte order (little-endian on every platform benchctl's images run on).
func asBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

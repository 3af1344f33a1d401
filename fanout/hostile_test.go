package fanout

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/testutil"
)

// rawSender is rank 0 of a 2-rank job speaking the protocol by hand to rank 1's receiver,
// whose Receive runs with a capture sink.
type rawSender struct {
	l    *link
	c    *capture
	done chan outcome
}

func newRawSender(t *testing.T) *rawSender {
	t.Helper()
	cfgs := chainConfigs(t, 2, nil)
	rc, err := Listen(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	s := &rawSender{c: &capture{}, done: make(chan outcome, 1)}
	go func() {
		res, err := rc.Receive(t.Context(), s.c.sink)
		s.done <- outcome{res: res, err: err}
	}()
	s.l, err = dialLink(t.Context(), withDefaults(t, cfgs[0]), "127.0.0.1:"+strconv.Itoa(rc.Port()), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.l.nc.Close() })
	return s
}

func (s *rawSender) control(t *testing.T, typ byte, p []byte) {
	if err := s.l.writeControl(typ, p); err != nil {
		t.Fatal(err)
	}
}

// result waits for the receiver and checks that it failed saying why, that its sink never
// saw a clean EOF and got at most what may be handed out before the end.
func (s *rawSender) result(t *testing.T, why string, sent int) {
	t.Helper()
	select {
	case o := <-s.done:
		if o.err == nil || !strings.Contains(o.err.Error(), why) {
			t.Errorf("receiver: %v, want %q", o.err, why)
		}
	case <-time.After(2 * time.Minute): // does not hang
		t.Fatal("the receiver did not return")
	}
	if s.c.cleanEOF() || s.c.buf.Len() > max(0, sent-holdBack) {
		t.Errorf("the sink got %d of %d bytes, clean EOF %v", s.c.buf.Len(), sent, s.c.cleanEOF())
	}
}

func withDefaults(t *testing.T, c Config) Config {
	c, err := c.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// A frame header claiming 2 GiB is refused before anything is allocated for it.
func TestFrameClaiming2GiB(t *testing.T) {
	noLeaks(t)
	s := newRawSender(t)
	s.control(t, frameStart, u64(1<<62))
	if _, err := s.l.nc.Write([]byte{frameData, 0x80, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	s.result(t, "D frame of 2147483648 bytes", 0)
}

// A trailer whose checksum does not match what arrived: the sink's reader fails and never
// hands out the last MiB.
func TestForgedTrailer(t *testing.T) {
	noLeaks(t)
	s := newRawSender(t)
	data := testutil.RandomBytes(t, 3<<20)
	s.control(t, frameStart, u64(uint64(len(data))))
	for p := data; len(p) > 0; p = p[defaultFrameSize:] {
		s.control(t, frameData, p[:defaultFrameSize])
	}
	s.control(t, frameTrailer, append(u64(uint64(len(data))), u64(12345)...))
	s.result(t, "checksum mismatch", len(data))
}

// A frame sent again (replayed) does not authenticate: its sequence number is bound.
func TestReplayedFrame(t *testing.T) {
	noLeaks(t)
	s := newRawSender(t)
	rec := &recordConn{Conn: s.l.nc}
	s.l.nc = rec
	data := testutil.RandomBytes(t, 64<<10)
	s.control(t, frameStart, u64(2*uint64(len(data))))
	rec.buf.Reset()
	s.control(t, frameData, data)
	if _, err := rec.Conn.Write(rec.buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	s.result(t, "frame 2 to rank 1 failed authentication", 2*len(data))
}

type recordConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *recordConn) Write(p []byte) (int, error) {
	c.buf.Write(p)
	return c.Conn.Write(p)
}

// 1 MB of garbage instead of a handshake is cut off at once, and the listener still takes
// the real predecessor.
func TestGarbageHandshake(t *testing.T) {
	noLeaks(t)
	cfgs := chainConfigs(t, 2, nil)
	rc, err := Listen(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(rc.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	go func() { _, _ = nc.Write(testutil.RandomBytes(t, 1<<20)) }()
	_ = nc.SetReadDeadline(time.Now().Add(time.Minute)) // cut off: EOF at once; the minute catches a hang
	if n, err := io.Copy(io.Discard, nc); n > int64(helloLen) || isTimeout(err) {
		t.Errorf("the garbage connection got %d bytes and %v; want the hello, then closed", n, err)
	}
	data := testutil.RandomBytes(t, 1<<20)
	c := &capture{}
	done := make(chan error)
	go func() { _, err := rc.Receive(t.Context(), c.sink); done <- err }()
	if _, err := Send(t.Context(), cfgs[0], Source{R: bytes.NewReader(data), Size: -1}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !bytes.Equal(c.buf.Bytes(), data) {
		t.Errorf("receiver: %v, %d bytes", err, c.buf.Len())
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Peers that connect and say nothing do not keep the real predecessor out, and are closed
// with the receiver.
func TestSilentPeers(t *testing.T) {
	noLeaks(t)
	cfgs := chainConfigs(t, 2, func(c *Config) { c.HandshakeTimeout = 300 * time.Millisecond })
	cfgs[0].HandshakeTimeout = 5 * time.Second // the sender waits in the accept queue meanwhile
	rc, err := Listen(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		nc, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(rc.Port()))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		wg.Go(func() {
			_ = nc.SetReadDeadline(time.Now().Add(time.Minute)) // closed with the receiver; the minute catches a hang
			if _, err := io.Copy(io.Discard, nc); isTimeout(err) {
				t.Error("a silent peer outlived the receiver")
			}
		})
	}
	done := make(chan error)
	go func() { _, err := rc.Receive(t.Context(), nil); done <- err }()
	start := time.Now()
	if _, err := Send(t.Context(), cfgs[0], Source{R: strings.NewReader("image"), Size: 5}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("through after %v", time.Since(start))
	wg.Wait()
}

// Listeners refuse, saying why, a dialer looking for another rank, a predecessor that is
// not theirs, and a second predecessor; a job channel's JSON hello is not a fan-out.
func TestRefusals(t *testing.T) {
	noLeaks(t)
	cfgs := chainConfigs(t, 3, nil)
	rc, err := Listen(cfgs[2])
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	addr := "127.0.0.1:" + strconv.Itoa(rc.Port())
	ctx := t.Context()
	for _, tc := range []struct {
		from, to int
		why      string
	}{{0, 1, "this is rank 2"}, {0, 2, "rank 2 receives from rank 1, not 0"}, {1, 2, ""}, {1, 2, "rank 2 already receives from rank 1"}} {
		l, err := dialLink(ctx, withDefaults(t, cfgs[tc.from]), addr, tc.to)
		var re *refusal
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%d -> %d: %v", tc.from, tc.to, err)
		case tc.why == "":
			defer l.nc.Close()
		case !errors.As(err, &re) || re.reason != tc.why:
			t.Errorf("%d -> %d: %v, want refused: %s", tc.from, tc.to, err, tc.why)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte(`{"v":2,"job":"4242.0","type":"hello","rank":0,"session":"x","seq":1,"mac":"00"}` + "\n"))
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, time.Minute) // does not hang
	defer cancel()
	if _, err := dialLink(ctx, withDefaults(t, cfgs[0]), ln.Addr().String(), 1); err == nil || err.Error() != "not a fan-out listener" {
		t.Errorf("a job channel's hello: %v", err)
	}
}

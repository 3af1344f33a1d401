package jobchan

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/testutil"
)

// recorder is a TCP proxy in front of the leader that keeps what the leader sent.
type recorder struct {
	ln   net.Listener
	mu   sync.Mutex
	sent []byte
}

func record(t *testing.T, target string) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			go func() { _, _ = io.Copy(up, c) }()
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						r.mu.Lock()
						r.sent = append(r.sent, buf[:n]...)
						r.mu.Unlock()
						_, _ = c.Write(buf[:n])
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	return r
}

// A recorded rank-0 transcript (hello, welcome, release, abort) replayed to another worker
// of the same job attempt does not get it in: the worker's own nonce is in the session
// of every message after the hello. (Before: only the leader sent a nonce.)
func TestReplayedLeaderTranscriptIsRejected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	cfg := testConfig(3, nil)
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec := record(t, l.Addr)
	w1 := startWorkers(t, ctx, cfg, rec.ln.Addr().String(), 1)[0]
	go func() { _ = l.Release(ctx, "image", map[string]string{"imageId": "sha256:evil"}) }()
	w1done := make(chan error, 1)
	go func() { _, err := w1.Wait(ctx, "image"); w1done <- err }()
	startWorkers(t, ctx, cfg, l.Addr, 2)[0].Wait(ctx, "image")
	if err := <-w1done; err != nil { // the release has come through the recorder
		t.Fatal(err)
	}
	rec.mu.Lock()
	transcript := append([]byte(nil), rec.sent...)
	rec.mu.Unlock()
	if strings.Count(string(transcript), "\n") < 3 {
		t.Fatalf("transcript too short: %s", transcript)
	}

	// A fake rank 0 that plays the transcript to whoever connects.
	fake, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	go func() {
		for {
			c, err := fake.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = c.Write(transcript); time.Sleep(time.Second); c.Close() }()
		}
	}()
	logs := &testutil.SyncBuffer{}
	for i, rank := range []int{2, 1} { // another rank, and the recorded rank itself
		c := testConfig(3, logs)
		c.Rank = rank
		// The worker retries until its context ends: it ends once the worker has said it
		// rejected the replay (or, if it never does, at the test's deadline).
		jctx, stop := context.WithCancel(ctx)
		joined := make(chan error, 1)
		go func() {
			w, err := Join(jctx, c, func(int) string { return fake.Addr().String() })
			if err == nil {
				w.Close()
			}
			joined <- err
		}()
		var err error
		for waiting := true; waiting; {
			select {
			case err = <-joined:
				waiting = false
			case <-time.After(5 * time.Millisecond):
				if strings.Count(logs.String(), "another session") > i {
					stop()
				}
			}
		}
		stop()
		if err == nil {
			t.Fatalf("rank %d joined a replayed transcript", rank)
		}
	}
	if !strings.Contains(logs.String(), "another session") {
		t.Errorf("the replay was not named:\n%s", logs.String())
	}
}

// Two processes claiming one rank: the second is refused at once with an error naming
// both, the first keeps its place, and the log does not flood. (Before: each replaced
// the other in a reconnect storm.)
func TestDuplicateRankIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang: a refusal ends Join, retries would run to here
	defer cancel()
	logs := &testutil.SyncBuffer{}
	cfg := testConfig(3, logs)
	l, ws := startJob(t, ctx, cfg, 1)
	defer l.Close()
	first := ws[0]
	c := cfg
	c.Rank = 1
	var slowest time.Duration
	for range 20 {
		start := time.Now()
		w, err := Join(ctx, c, func(int) string { return l.Addr })
		var re *RefusedError
		if err == nil {
			w.Close()
			t.Fatal("a second process joined as rank 1")
		}
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "rank 1 is already taken by") || !strings.Contains(re.Reason, "claims it too") {
			t.Fatalf("got %v", err)
		}
		slowest = max(slowest, time.Since(start))
		if !re.InvalidInput() {
			t.Error("a refusal is not marked bad input")
		}
	}
	t.Logf("the slowest refusal took %v", slowest.Round(time.Millisecond))
	if got := l.Connected(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("connected: %v", got)
	}
	if first.Err() != nil {
		t.Fatalf("the first process lost its place: %v", first.Err())
	}
	if n := strings.Count(logs.String(), "refused a second process"); n != 1 {
		t.Errorf("%d refusal warnings for 20 attempts, want 1 (rate-limited)", n)
	}
	// The same process reconnecting is no second process.
	first.mu.Lock()
	first.c.c.Close()
	first.mu.Unlock()
	go func() { _ = l.Release(ctx, "p", nil) }()
	w2 := startWorkers(t, ctx, cfg, l.Addr, 2)[0]
	go func() { _, _ = w2.Wait(ctx, "p") }()
	if _, err := first.Wait(ctx, "p"); err != nil {
		t.Fatalf("after reconnecting: %v", err)
	}
}

// failingListener fails its first n Accepts with EMFILE, as a process out of file
// descriptors does.
type failingListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

func (f *failingListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return f.Listener.Accept()
}

// EMFILE on accept is retried with backoff: the workers still meet, and the log says so
// once, not once per failure. (Before: one failed Accept ended the listener for good.)
func TestAcceptSurvivesEMFILE(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	logs := &testutil.SyncBuffer{}
	cfg := testConfig(3, logs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := serveOn(cfg, &failingListener{Listener: ln, n: 8}, 0, nil)
	defer l.Close()
	ws := startWorkers(t, ctx, cfg, l.Addr, 1, 2)
	go func() { _, _ = ws[1].Wait(ctx, "image") }()
	go func() { _ = l.Release(ctx, "image", nil) }()
	if _, err := ws[0].Wait(ctx, "image"); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	if n := strings.Count(logs.String(), "too many open files"); n != 1 {
		t.Errorf("%d EMFILE warnings, want 1:\n%s", n, logs.String())
	}
}

// Connections that never authenticate are held at most gate.Max() at once: beyond that,
// the oldest silent ones are closed to make room; rank 0 greets every one at once, closes
// them all when it closes, and a real worker still joins. (Before: every connection got a
// goroutine and a descriptor for 10 s; then 64 of them, 3 s each, held the rest in the
// kernel's queue.)
func TestHandshakesAreBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	cfg := testConfig(2, nil)
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bound := l.gate.Max()
	if limit := raiseFileLimit(); limit < uint64(2*bound+256) {
		t.Fatalf("needs %d open files, the limit is %d", 2*bound+256, limit)
	}
	const extra = 64
	var conns []net.Conn
	for range bound + extra {
		c, err := net.Dial("tcp", l.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Every one is greeted; the oldest extra are closed to make room (they read EOF).
	// The deadline only catches a hang: on time, this takes the dials' time.
	until := time.Now().Add(time.Minute)
	greeted := make([]chan error, len(conns))
	readers := make([]*bufio.Reader, len(conns))
	for i, c := range conns {
		greeted[i], readers[i] = make(chan error, 1), bufio.NewReader(c)
		go func() {
			_ = c.SetReadDeadline(until)
			greeted[i] <- readFrame(readers[i])
		}()
	}
	for i := range conns {
		if err := <-greeted[i]; err != nil {
			t.Fatalf("connection %d was not greeted: %v", i, err)
		}
	}
	for i := range extra {
		if _, err := readers[i].ReadByte(); err != io.EOF {
			t.Fatalf("connection %d of %d: %v, want closed (the oldest make room)", i, len(conns), err)
		}
	}
	// The gate closed those and no more: the rest still wait.
	if n, ev := l.gate.Waiting(), l.gate.Evicted(); n != bound || ev != extra {
		t.Errorf("%d connections wait to authenticate and %d were closed, want %d and %d", n, ev, bound, extra)
	}
	open := make([]chan error, len(conns))
	for i := extra; i < len(conns); i++ {
		open[i] = make(chan error, 1)
		go func() {
			_ = conns[i].SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // a read that waits: still open
			_, err := readers[i].ReadByte()
			open[i] <- err
		}()
	}
	for i := extra; i < len(conns); i++ {
		if err := <-open[i]; !isTimeout(err) {
			t.Fatalf("connection %d of %d: %v, want still open (only the oldest make room)", i, len(conns), err)
		}
	}
	start := time.Now()
	w := startWorkers(t, ctx, cfg, l.Addr, 1)[0]
	go func() { _ = l.Release(ctx, "p", nil) }()
	if _, err := w.Wait(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	t.Logf("a real worker joined with the gate full in %v", time.Since(start).Round(time.Millisecond))
	l.Close()
	if n := l.gate.Waiting(); n != 0 {
		t.Errorf("%d connections still wait after Close", n)
	}
	last := len(conns) - 1
	_ = conns[last].SetReadDeadline(time.Now().Add(time.Minute)) // closed: EOF at once; the minute catches a hang
	if _, err := readers[last].ReadByte(); err != io.EOF {
		t.Errorf("a waiting connection outlived Close: %v", err)
	}
}

// readFrame reads one message frame (the hello) whole: its header line and its body.
func readFrame(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	n, err := bodyLen(line)
	if err != nil {
		return err
	}
	_, err = r.Discard(n)
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

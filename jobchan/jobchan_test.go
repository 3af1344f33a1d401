package jobchan

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/freeport"
	"github.com/benchctl/benchctl/internal/testutil"
)

func testConfig(world int, logs *testutil.SyncBuffer) Config {
	hosts := make([]string, world)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("n%d", i+1)
	}
	cfg := Config{Job: "42.0", World: world, Hosts: hosts, Secret: []byte("s3cret-s3cret-s3cret"), Master: "127.0.0.1",
		Ports: []int{0}, LogEvery: 50 * time.Millisecond, AddrOf: func(int) string { return "127.0.0.1" }}
	if logs != nil {
		cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
	}
	return cfg
}

func startWorkers(t *testing.T, ctx context.Context, cfg Config, addr string, ranks ...int) []*Worker {
	t.Helper()
	ws := make([]*Worker, len(ranks))
	for i, r := range ranks {
		c := cfg
		c.Rank = r
		w, err := Join(ctx, c, func(int) string { return addr })
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		t.Cleanup(func() { w.Close() })
		ws[i] = w
	}
	return ws
}

// startJob is the usual set-up: rank 0 listens on cfg and the given ranks join it. The
// workers close when the test ends; the caller closes the leader (defer l.Close()), which
// startJob does itself if a worker fails to join.
func startJob(t *testing.T, ctx context.Context, cfg Config, ranks ...int) (*Leader, []*Worker) {
	t.Helper()
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	joined := false
	defer func() {
		if !joined {
			l.Close()
		}
	}()
	ws := startWorkers(t, ctx, cfg, l.Addr, ranks...)
	joined = true
	return l, ws
}

func TestBarrierPhases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := testConfig(4, nil)
	l, ws := startJob(t, ctx, cfg, 1, 2, 3)
	defer l.Close()
	var wg sync.WaitGroup
	got := make([]map[string]string, len(ws))
	errs := make([]error, len(ws))
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got[i], errs[i] = w.Wait(ctx, "image"); errs[i] != nil {
				return
			}
			_, errs[i] = w.Wait(ctx, "ready")
		}()
	}
	if err := l.Release(ctx, "image", map[string]string{"imageId": "sha256:abc", "key": "k"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, "ready", nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range ws {
		if errs[i] != nil || got[i]["imageId"] != "sha256:abc" {
			t.Errorf("worker %d: %v %v", i+1, got[i], errs[i])
		}
	}
	if err := l.Release(ctx, "image", nil); err == nil || !strings.Contains(err.Error(), "already released") {
		t.Errorf("double release: %v", err)
	}
}

func TestBarrierRejectsForgedReplayedAndOtherJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logs := &testutil.SyncBuffer{}
	cfg := testConfig(2, logs)
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	// A worker with another secret never gets in: the hello does not verify.
	bad := cfg
	bad.Rank, bad.Secret = 1, []byte("wrong")
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := Join(short, bad, func(int) string { return l.Addr }); err == nil {
		t.Fatal("a worker with the wrong secret joined")
	}
	cancelShort()

	// A forged join (bad MAC) is rejected and logged with the peer address.
	nc, err := net.Dial("tcp", l.Addr)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	r.ReadString('\n') // hello's header
	forged := (&message{V: protocolVersion, Job: "42.0", Type: msgJoin, Rank: 1, Session: "x", Seq: 1}).appendFrame(nil, hmac.New(sha256.New, []byte("not the secret")))
	nc.Write(forged)
	nc.Close()

	// A valid join recorded on one connection and replayed on another is rejected.
	c1 := dialRaw(t, cfg, l.Addr)
	line := c1.signed(message{Type: msgJoin, Rank: 1})
	c1.nc.Close()
	c2 := dialRaw(t, cfg, l.Addr)
	c2.nc.Write(line)
	c2.nc.Close()

	// Another job's message (same secret, other job id) is rejected.
	other := cfg
	other.Job = "43.0"
	c3 := dialRaw(t, cfg, l.Addr)
	oc := newConn(c3.nc, cfg.Secret, other.Job)
	oc.session = c3.session
	oc.send(message{Type: msgJoin, Rank: 1}, time.Second)
	c3.nc.Close()

	deadline := time.Now().Add(time.Minute) // generous: on time, they come in milliseconds
	for time.Now().Before(deadline) && strings.Count(logs.String(), "job channel: rejected a connection") < 3 {
		time.Sleep(20 * time.Millisecond)
	}
	out := logs.String()
	for _, want := range []string{"bad MAC", "another session", `job \"43.0\"`, "peer=127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if len(l.Connected()) != 0 {
		t.Errorf("a rejected peer is connected: %v", l.Connected())
	}
}

// rawConn is a hand-driven client for protocol tests.
type rawConn struct {
	nc      net.Conn
	c       *conn
	session string
}

func dialRaw(t *testing.T, cfg Config, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(nc, cfg.Secret, cfg.Job)
	hello, err := c.recv(time.Now().Add(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.session = hello.Session
	return &rawConn{nc: nc, c: c, session: hello.Session}
}

// waitArrived waits until rank 0 has seen each of ranks arrive at phase.
func waitArrived(t *testing.T, ctx context.Context, l *Leader, phase string, ranks ...int) {
	t.Helper()
	for {
		l.mu.Lock()
		all := true
		for _, r := range ranks {
			all = all && l.arrived[phase][r]
		}
		changed := l.changed
		l.mu.Unlock()
		if all {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("ranks %v did not all arrive at %s", ranks, phase)
		}
	}
}

func (r *rawConn) signed(m message) []byte {
	r.c.sendSeq++
	m.V, m.Job, m.Session, m.Seq = protocolVersion, r.c.job, r.c.session, r.c.sendSeq
	return m.appendFrame(nil, hmac.New(sha256.New, r.c.secret))
}

// Every worker waiting at a barrier gets rank 0's abort, with its reason; a worker that
// joins after the abort gets it at once. How fast is BenchmarkAbortFanout's to measure: on
// a shared machine only that it arrives is asserted, and the time is logged.
func TestBarrierAbortReachesEveryWorkerFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	cfg := testConfig(5, nil)
	l, ws := startJob(t, ctx, cfg, 1, 2, 3)
	defer l.Close()
	results := make(chan time.Duration, len(ws))
	for _, w := range ws {
		go func() {
			_, err := w.Wait(ctx, "image")
			var ae *AbortError
			if errors.As(err, &ae) && ae.Reason == "build failed: step 3" {
				results <- 0
			} else {
				results <- -1
			}
		}()
	}
	waitArrived(t, ctx, l, "image", 1, 2, 3) // every worker waits at the barrier
	start := time.Now()
	l.Abort("build failed: step 3", 2)
	for range ws {
		if r := <-results; r != 0 {
			t.Fatal("a worker did not get the abort reason")
		}
	}
	t.Logf("the abort reached every worker in %v", time.Since(start).Round(time.Microsecond))
	// A worker that joins after the abort gets it at once.
	late := startWorkers(t, ctx, cfg, l.Addr, 4)[0]
	if _, err := late.Wait(ctx, "image"); !errors.As(err, new(*AbortError)) {
		t.Errorf("late joiner: %v", err)
	}
}

// The barrier's timeout (its context ending) names the nodes missing and why: lost (its
// connection dropped), never connected; while it waits, it logs whom it waits for.
func TestBarrierTimeoutNamesMissingAndLostNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	logs := &testutil.SyncBuffer{}
	cfg := testConfig(4, logs)
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	go ws[0].Wait(ctx, "image")
	ws[1].mu.Lock() // n3's network drops: no goodbye, no reconnect
	ws[1].closed = true
	ws[1].c.c.Close()
	ws[1].mu.Unlock()
	waitArrived(t, ctx, l, "image", 1)
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); _, dropped := l.dropped[2]; return dropped })
	barrier, timeout := context.WithCancel(ctx)
	defer timeout()
	released := make(chan error, 1)
	go func() { released <- l.Release(barrier, "image", nil) }()
	waitFor(t, func() bool { return strings.Contains(logs.String(), "waiting for: n3") })
	timeout() // the barrier's timeout, once it has said whom it waits for
	err := <-released
	if err == nil {
		t.Fatal("released with missing nodes")
	}
	msg := err.Error()
	for _, want := range []string{"timed out with 2/4", "n3 (lost", "n4 (never connected)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if !strings.Contains(logs.String(), "waiting for: n3") || !strings.Contains(logs.String(), "lost the connection to a worker") {
		t.Errorf("no progress/lost log lines:\n%s", logs.String())
	}
}

func TestBarrierWorkerReconnects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	cfg := testConfig(2, nil)
	l, ws := startJob(t, ctx, cfg, 1)
	defer l.Close()
	w := ws[0]
	done := make(chan error, 1)
	go func() { _, err := w.Wait(ctx, "ready"); done <- err }()
	waitArrived(t, ctx, l, "ready", 1) // the worker waits at the barrier
	l.mu.Lock()
	l.peers[1].c.c.Close() // the network drops the worker
	l.mu.Unlock()
	if err := l.Release(ctx, "ready", nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestBarrierWorkerWaitsForALateLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	// Below the ephemeral range: the worker's own redials cannot take the port before
	// rank 0 listens (a loopback dial to a port of that range can connect to itself).
	ports, err := freeport.Range(1)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.SyncBuffer{}
	cfg := testConfig(2, logs)
	cfg.Ports = ports
	joined := make(chan error, 1)
	go func() {
		c := cfg
		c.Rank = 1
		w, err := Join(ctx, c, nil)
		if err == nil {
			_, err = w.Wait(ctx, "image")
			w.Close()
		}
		joined <- err
	}()
	waitFor(t, func() bool { return strings.Contains(logs.String(), "to listen") }) // the worker is retrying
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Release(ctx, "image", nil); err != nil {
		t.Fatal(err)
	}
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
}

func TestBarrierWorkerFailureAbortsEveryone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := testConfig(3, nil)
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	got := make(chan error, 1)
	go func() { _, err := ws[0].Wait(ctx, "ready"); got <- err }()
	if err := ws[1].Fail("failed: image load failed: disk full", 1); err != nil {
		t.Fatal(err)
	}
	err := <-got
	var ae *AbortError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "rank 2 (n3) failed: image load failed: disk full") || ae.ExitCode() != 1 {
		t.Fatalf("worker 1 got %v", err)
	}
	if err := l.Release(ctx, "ready", nil); !errors.As(err, &ae) {
		t.Fatalf("leader release after abort: %v", err)
	}
}

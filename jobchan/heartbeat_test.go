package jobchan

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// With a fake clock and a heartbeat of an hour (so no real tick happens): a worker silent
// for three periods is lost, named with its host and when it was last seen, and rank 0
// aborts the job (exit 1) for every other worker. A worker that said goodbye is not lost.
func TestLeaderDeclaresASilentWorkerLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clock := &fakeClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(4, nil)
	cfg.Heartbeat, cfg.Now = time.Hour, clock.Now
	l, ws := startJob(t, ctx, cfg, 1, 2, 3)
	defer l.Close()
	ws[2].Close() // rank 3 finished and left
	waitFor(t, func() bool { return len(l.Connected()) == 2 })
	joined := clock.Now()

	l.checkLost(clock.add(3 * time.Hour)) // exactly the timeout: not yet
	if l.Err() != nil {
		t.Fatalf("lost at the timeout: %v", l.Err())
	}
	clock.add(30 * time.Minute)
	// rank 1 speaks (a heartbeat), rank 2 stays silent
	if err := ws[0].c.send(message{Type: msgBeat}, time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.seen[1].After(joined) })
	l.checkLost(clock.Now())
	lost := l.Lost()
	if len(lost) != 1 || lost[0].Rank != 2 || lost[0].Host != "n3" || !lost[0].LastSeen.Equal(joined) || !strings.Contains(lost[0].Why, "silent for 3h30m0s") {
		t.Fatalf("lost: %+v", lost)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("rank 0 did not abort the job")
	}
	_, err := ws[0].Wait(ctx, "run")
	var ae *AbortError
	if !errors.As(err, &ae) || ae.ExitCode() != 1 || !strings.Contains(ae.Reason, "lost rank 2 (n3), last seen 2026-11-23T12:00:00Z") {
		t.Fatalf("rank 1 got %v", err)
	}
}

// A worker whose connection dropped and that does not come back within the timeout is
// lost with that reason.
func TestLeaderDeclaresADroppedWorkerLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clock := &fakeClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(2, nil)
	cfg.Heartbeat, cfg.Now = time.Hour, clock.Now
	l, ws := startJob(t, ctx, cfg, 1)
	defer l.Close()
	w := ws[0]
	kill(w)
	waitFor(t, func() bool { return len(l.Connected()) == 0 })
	l.checkLost(clock.add(2 * time.Hour))
	if l.Err() != nil {
		t.Fatal("lost before the timeout")
	}
	l.checkLost(clock.add(2 * time.Hour))
	if lost := l.Lost(); len(lost) != 1 || !strings.Contains(lost[0].Why, "connection closed and not back within 3h0m0s") {
		t.Fatalf("lost: %+v", lost)
	}
}

// A worker that hears nothing from rank 0 for three periods ends with "lost rank 0 (host)
// at T", and Wait returns it.
func TestWorkerDeclaresRankZeroLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clock := &fakeClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(2, nil)
	cfg.Heartbeat, cfg.Now = time.Hour, clock.Now
	l, ws := startJob(t, ctx, cfg, 1)
	defer l.Close()
	w := ws[0]
	w.checkLost(clock.add(3 * time.Hour))
	if w.Err() != nil {
		t.Fatal("lost at the timeout")
	}
	w.checkLost(clock.add(time.Second))
	select {
	case <-w.Done():
	default:
		t.Fatal("Done is not closed")
	}
	_, err := w.Wait(ctx, "run")
	var le *LostError
	if !errors.As(err, &le) || le.ExitCode() != 1 || err.Error() != "lost rank 0 (n1) at 2026-11-23T12:00:00Z: silent for 3h0m1s (heartbeat every 1h0m0s)" {
		t.Fatalf("got %v", err)
	}
}

// kill ends a worker as SIGKILL would: no goodbye, no reconnect, no more heartbeats.
func kill(w *Worker) {
	w.mu.Lock()
	w.closed = true
	close(w.quit)
	w.c.c.Close()
	w.mu.Unlock()
}

// killLeader ends rank 0 as SIGKILL would: no end message, the port closed.
func killLeader(l *Leader) {
	l.mu.Lock()
	l.closed = true
	close(l.quit)
	for _, p := range l.peers {
		p.c.c.Close()
	}
	l.mu.Unlock()
	l.ln.Close()
}

// In real time, with a 200 ms heartbeat: heartbeats keep a quiet job alive past the lost
// timeout; rank 0 dies and every worker ends with a *LostError for it (the lost timeout,
// not the barrier's, ends its wait); a worker dies and rank 0 aborts the job naming it.
// (Real sockets: no fake clock; how soon is not asserted, the cause is.)
func TestDeathIsNoticedWithinTheLostTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang: the barrier's timeout
	defer cancel()
	cfg := testConfig(3, nil)
	cfg.Heartbeat = 200 * time.Millisecond
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	joined := time.Now()
	// Heartbeats keep a quiet job alive: each side hears the other after more than twice
	// the lost timeout, and nobody was lost meanwhile.
	waitFor(t, func() bool {
		l.mu.Lock()
		heard := l.seen[1].Sub(joined) > 2*cfg.LostTimeout() && l.seen[2].Sub(joined) > 2*cfg.LostTimeout()
		l.mu.Unlock()
		ws[0].mu.Lock()
		defer ws[0].mu.Unlock()
		return heard && ws[0].lastSeen.Sub(joined) > 2*cfg.LostTimeout()
	})
	if l.Err() != nil || ws[0].Err() != nil || ws[1].Err() != nil {
		t.Fatalf("a quiet job was lost: %v %v %v", l.Err(), ws[0].Err(), ws[1].Err())
	}

	start := time.Now()
	kill(ws[1])
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("rank 0 never noticed")
	}
	t.Logf("rank 0 noticed in %v (lost timeout %v)", time.Since(start).Round(time.Millisecond), cfg.LostTimeout())
	if !strings.Contains(l.Err().Error(), "lost rank 2 (n3)") {
		t.Errorf("rank 0: %v", l.Err())
	}

	l2cfg := testConfig(2, nil)
	l2cfg.Heartbeat = 200 * time.Millisecond
	l2, err := Listen(l2cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := startWorkers(t, ctx, l2cfg, l2.Addr, 1)[0]
	start = time.Now()
	killLeader(l2)
	_, err = w.Wait(ctx, "run")
	var le *LostError
	if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), "lost rank 0 (n1) at ") || !strings.Contains(err.Error(), "connection closed and not back within 600ms") {
		t.Fatalf("worker: %v", err)
	}
	t.Logf("the worker noticed in %v (lost timeout %v)", time.Since(start).Round(time.Millisecond), l2cfg.LostTimeout())
}

// Rank 0 closing at the end of the job is not a loss: workers still running are told,
// and stop supervising instead of ending with a *LostError.
func TestLeaderCloseIsNotALoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	cfg := testConfig(2, nil)
	cfg.Heartbeat = 50 * time.Millisecond
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := startWorkers(t, ctx, cfg, l.Addr, 1)[0]
	l.Close()
	// Told that rank 0 is done, the worker does not take its silence for a loss, however
	// long past the lost timeout it looks.
	waitFor(t, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.ended || w.err != nil })
	w.checkLost(w.cfg.now().Add(10 * cfg.LostTimeout()))
	if w.Err() != nil {
		t.Fatalf("the worker took rank 0's end for a loss: %v", w.Err())
	}
	if _, err := w.Wait(ctx, "next"); err == nil || !strings.Contains(err.Error(), "ended the job") {
		t.Fatalf("wait after the end: %v", err)
	}
}

// Finish returns once every worker has left or is lost, or when the job is aborted.
func TestLeaderFinishWaitsForEveryWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	cfg := testConfig(3, nil)
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	done := make(chan struct{})
	go func() { l.Finish(ctx); close(done) }()
	ws[0].Close()
	select {
	case <-done:
		t.Fatal("Finish returned with a worker still running")
	case <-time.After(200 * time.Millisecond):
	}
	ws[1].Close()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Finish did not return")
	}
}

// waitFor polls cond until it holds; the minute only catches a hang.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

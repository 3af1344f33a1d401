package jobchan

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A relay whose own benchmark fails leaves at once: its group is aborted, not told that
// rank 0 is done (which would leave their containers running to their timeout).
func TestRelayLeavingAbortsItsGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	_, ws := startTree(t, ctx, 12, 4, 0)
	if err := ws[5].Fail("failed benchmark b: exited with code 1", 3); err != nil {
		t.Fatal(err)
	}
	ws[5].Close()
	for _, r := range []int{6, 7, 8} {
		select {
		case <-ws[r].Done():
		case <-ctx.Done():
			t.Fatalf("rank %d was not aborted (ended: %v)", r, ws[r].ended)
		}
		var ae *AbortError
		if !errors.As(ws[r].Err(), &ae) || !strings.Contains(ae.Reason, "rank 5 (n6)") {
			t.Errorf("rank %d: %v", r, ws[r].Err())
		}
	}
}

// A relay waiting for its group returns when rank 0 ends the job.
func TestRelayFinishReturnsWhenRankZeroEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	l, ws := startTree(t, ctx, 12, 4, 0)
	done := make(chan struct{})
	finish, stop := context.WithCancel(context.Background()) // Finish's own deadline is not what ends it
	defer stop()
	go func() { ws[5].Finish(finish); close(done) }()
	l.Close()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the relay still waits for its group after rank 0 ended the job")
	}
}

// A worker that left without arriving will never arrive: Release says so at once instead
// of waiting out the barrier timeout (which, here, is long enough to catch a hang only: a
// Release that waited it out would end with "timed out", not this error).
func TestReleaseFailsWhenAWorkerLeftWithoutArriving(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // the barrier timeout; does not hang
	defer cancel()
	cfg := testConfig(3, nil)
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	go func() { _, _ = ws[0].Wait(ctx, "p") }()
	ws[1].Close()
	start := time.Now()
	err := l.Release(ctx, "p", nil)
	if err == nil || !strings.Contains(err.Error(), "n3 (rank 2) left the job before it arrived") {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
}

// An abort without a reason is still an abort (and no double close).
func TestAbortWithoutAReason(t *testing.T) {
	cfg := testConfig(2, nil)
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Abort("", 1)
	l.Abort("", 1)
	if l.Err() == nil {
		t.Fatal("no verdict")
	}
}

// Rejections are rate-limited by kind, not by the text a stranger chose.
func TestRejectionKindIgnoresPeerText(t *testing.T) {
	a := &authError{"protocol version 7 (this benchctl speaks 2; use the same benchctl on every node)"}
	b := &authError{"protocol version 9999 (this benchctl speaks 2; use the same benchctl on every node)"}
	if a.kind() != b.kind() || a.kind() != "protocol version " {
		t.Errorf("%q %q", a.kind(), b.kind())
	}
}

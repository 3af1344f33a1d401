package jobchan

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benchctl/benchctl/internal/testutil"
)

// A build error whose log tail has a 10,000-character line and 300 lines: every worker
// gets the abort at once, with exit code 2 and the start of the reason, and does not
// reconnect in a loop. (Before: the 4 KiB read buffer dropped it as forged.)
func TestLongAbortReasonReachesEveryWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // does not hang
	defer cancel()
	logs := &testutil.SyncBuffer{}
	cfg := testConfig(3, logs)
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	reason := "build failed: step 3/3: " + strings.Repeat("x", 10000) + strings.Repeat("\nline of output", 300)
	start := time.Now()
	l.Abort(reason, 2)
	for _, w := range ws {
		_, err := w.Wait(ctx, "image")
		var ae *AbortError
		if !errors.As(err, &ae) || ae.ExitCode() != 2 || !strings.HasPrefix(ae.Reason, "build failed: step 3/3: xxx") ||
			!strings.Contains(ae.Reason, "bytes in all") || len(ae.Reason) > MaxReason {
			t.Fatalf("worker got %v", err)
		}
	}
	t.Logf("the abort reached every worker in %v", time.Since(start).Round(time.Microsecond))
	if got := l.Err().(*AbortError).Reason; got != reason {
		t.Errorf("rank 0 kept %d bytes of the reason, want all %d", len(got), len(reason))
	}
	if n := strings.Count(logs.String(), "reconnecting"); n != 0 {
		t.Errorf("workers reconnected %d times:\n%s", n, logs.String()[:min(2000, len(logs.String()))])
	}
}

// A worker's 20,000-character failure reaches rank 0, which aborts everyone with it.
func TestLongFailureReasonAbortsTheJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := testConfig(3, nil)
	l, ws := startJob(t, ctx, cfg, 1, 2)
	defer l.Close()
	if err := ws[1].Fail("failed benchmark b: "+strings.Repeat("é", 10000), 3); err != nil {
		t.Fatal(err)
	}
	_, err := ws[0].Wait(ctx, "x")
	var ae *AbortError
	if !errors.As(err, &ae) || ae.ExitCode() != 3 || !strings.HasPrefix(ae.Reason, "rank 2 (n3) failed benchmark b: éé") || !utf8.ValidString(ae.Reason) {
		t.Fatalf("worker 1 got %v", err)
	}
}

// Whatever send writes, recv reads: the longest reason and data the protocol carries, and
// more keys than fit are an error at the sender, not a line the peer drops.
func TestEveryMessageSendMakesIsRead(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ca, cb := newConn(a, []byte("k"), "1.0"), newConn(b, []byte("k"), "1.0")
	data := map[string]string{}
	for i := range 12 {
		data[string(rune('a'+i))] = strings.Repeat("v", 2*maxValue) // cut to maxValue each
	}
	m := message{Type: msgRelease, Phase: strings.Repeat("p", 100), Reason: strings.Repeat("r\n", 50000), Data: data}
	errc := make(chan error, 1)
	go func() { errc <- ca.send(m, time.Second) }()
	got, err := cb.recv(time.Now().Add(2 * time.Second))
	if err != nil {
		t.Fatalf("recv: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(got.Reason) > MaxReason || len(got.Data["a"]) > maxValue || len(got.Data) != 12 {
		t.Errorf("reason %d bytes, value %d bytes, %d values", len(got.Reason), len(got.Data["a"]), len(got.Data))
	}
	for i := range 20 {
		data[string(rune('m'+i))] = strings.Repeat("v", maxValue)
	}
	if err := ca.send(message{Type: msgRelease, Data: data}, time.Second); err == nil || !strings.Contains(err.Error(), "over the protocol's") {
		t.Errorf("an oversized message was sent: %v", err)
	}
}

// A line over maxMessage is refused as too long, with no more read than the limit.
func TestOversizedLineIsRejected(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cb := newConn(b, []byte("k"), "1.0")
	go func() { _, _ = a.Write([]byte(strings.Repeat("x", maxMessage+10) + "\n")) }()
	_, err := cb.recv(time.Now().Add(2 * time.Second))
	var ae *authError
	if !errors.As(err, &ae) || !strings.Contains(ae.why, "too long") {
		t.Fatalf("got %v", err)
	}
}

func TestTruncateReason(t *testing.T) {
	if s := TruncateReason("short"); s != "short" {
		t.Errorf("%q", s)
	}
	for _, in := range []string{strings.Repeat("a", 5000), strings.Repeat("日本", 3000), strings.Repeat("a", MaxReason+1)} {
		out := TruncateReason(in)
		if len(out) > MaxReason || !utf8.ValidString(out) || !strings.Contains(out, "bytes in all") || out[:10] != in[:10] {
			t.Errorf("%d bytes in: %d out, valid %v: %q", len(in), len(out), utf8.ValidString(out), out[len(out)-80:])
		}
	}
}

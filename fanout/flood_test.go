package fanout

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/admit/admittest"
)

// floodIdle and floodDrip are the strangers held against a receiver: silent connections,
// and slow ones that send a byte a second; each reconnects as soon as it is dropped.
const floodIdle, floodDrip = 2000, 200

// floodFrom are the strangers' addresses: the predecessor's own, and another.
var floodFrom = []string{"127.0.0.1", "127.0.0.2"}

// floodConfigs are a chain of 2 ranks with a 3 s handshake deadline and a ConnectTimeout
// that only catches a hang (before the fix, the strangers held the predecessor off for
// all of it: it failed then, after its 2 minutes).
func floodConfigs(tb testing.TB) []Config {
	tb.Helper()
	if limit := admittest.RaiseFileLimit(2*(floodIdle+floodDrip) + 512); limit < 2*(floodIdle+floodDrip)+512 {
		tb.Fatalf("needs %d open files, the limit is %d (raise ulimit -n)", 2*(floodIdle+floodDrip)+512, limit)
	}
	return chainConfigs(tb, 2, func(c *Config) { c.ConnectTimeout, c.HandshakeTimeout = 2*time.Minute, 3*time.Second })
}

// startFlood holds floodIdle silent and floodDrip slow strangers from the address from
// against the receiver's port, and returns once every stranger has connected and the slow
// ones have been dropped past the handshake deadline (and come back, as they would for as
// long as they are held). The caller stops them.
func startFlood(tb testing.TB, rc *Receiver, from string) *admittest.Flood {
	tb.Helper()
	flood := admittest.Start("127.0.0.1:"+strconv.Itoa(rc.Port()), from, floodIdle, floodDrip)
	// The minutes only catch a hang: on time, seconds.
	if !flood.WaitHeld(floodIdle+floodDrip, 2*time.Minute) {
		flood.Stop()
		tb.Fatalf("the strangers made only %d connections", flood.Dials.Load())
	}
	for until := time.Now().Add(2 * time.Minute); flood.Drops.Load() < floodDrip; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(until) {
			flood.Stop()
			tb.Fatalf("only %d strangers' connections were dropped: the slow ones were not held past the deadline", flood.Drops.Load())
		}
	}
	return flood
}

// The predecessor gets through to a receiver while 2,000 silent and 200 slow connections,
// from its own address or another, are held against the receiver's port and reconnect as
// soon as they are dropped. (Before: 16 handshakes at a time, 5 s each, the rest in the
// kernel's queue: about 32 silent peers held the predecessor off until its 2-minute connect
// timeout.) How long it takes (within a second asked) is
// BenchmarkPredecessorGetsThroughStrangers's to measure: here it is logged.
func TestPredecessorGetsThroughStrangers(t *testing.T) {
	for _, from := range floodFrom {
		t.Run("from="+from, func(t *testing.T) {
			noLeaks(t)
			cfgs := floodConfigs(t)
			rc, err := Listen(cfgs[1])
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			flood := startFlood(t, rc, from)
			defer flood.Stop()
			held := flood.Held()
			done := make(chan error, 1)
			go func() { _, err := rc.Receive(t.Context(), nil); done <- err }()
			start := time.Now()
			if _, err := Send(t.Context(), cfgs[0], Source{R: strings.NewReader("image"), Size: 5}); err != nil {
				t.Fatalf("after %v with %d strangers connected: %v", time.Since(start), held, err)
			}
			d := time.Since(start)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			t.Logf("through in %v; strangers: %d held as it began, %d dials, %d dropped", d.Round(time.Millisecond), held, flood.Dials.Load(), flood.Drops.Load())
		})
	}
}

// BenchmarkPredecessorGetsThroughStrangers measures how long the predecessor takes to get
// through to a receiver and stream a few bytes (ms/through, within a second asked; the
// figure TestPredecessorGetsThroughStrangers only logs) while the strangers are held
// against the receiver's port.
//
//	go test ./fanout -run '^$' -bench PredecessorGetsThrough -benchtime 5x
func BenchmarkPredecessorGetsThroughStrangers(b *testing.B) {
	for _, from := range floodFrom {
		b.Run("from="+from, func(b *testing.B) {
			var total, slowest time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cfgs := floodConfigs(b)
				rc, err := Listen(cfgs[1])
				if err != nil {
					b.Fatal(err)
				}
				flood := startFlood(b, rc, from)
				done := make(chan error, 1)
				go func() { _, err := rc.Receive(b.Context(), nil); done <- err }()
				b.StartTimer()
				start := time.Now()
				_, err = Send(b.Context(), cfgs[0], Source{R: strings.NewReader("image"), Size: 5})
				d := time.Since(start)
				b.StopTimer()
				if err == nil {
					err = <-done
				}
				flood.Stop()
				rc.Close()
				if err != nil {
					b.Fatal(err)
				}
				total, slowest = total+d, max(slowest, d)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/through")
			b.ReportMetric(float64(slowest.Microseconds())/1000, "ms/slowest")
		})
	}
}

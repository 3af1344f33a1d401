package jobchan

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/admit/admittest"
	"github.com/benchctl/benchctl/internal/testutil"
)

// floodIdle and floodDrip are the strangers held against a listener: silent connections,
// and slow ones that send a byte a second; each reconnects as soon as it is dropped.
const floodIdle, floodDrip = 2000, 200

// joiners is how many workers join, one after the other, while the strangers are held.
const joiners = 6

// floodCases are the strangers' address and the gate's bound (0: the default, more than
// the strangers): from the workers' own address, from another, and more strangers than
// the gate holds, so that they come and go through the kernel's queue ahead of the workers.
var floodCases = []struct {
	from    string
	gateMax int
}{
	{"127.0.0.1", 0},
	{"127.0.0.2", 0},
	{"127.0.0.2", 256},
}

// startFlood starts rank 0 of a job of joiners+1 ranks with floodIdle silent and floodDrip
// slow strangers held against it from the address from, and returns once every stranger
// has connected and the slow ones have been dropped past the handshake deadline (and come
// back, as they would for as long as they are held).
func startFlood(tb testing.TB, from string, gateMax int, logs *testutil.SyncBuffer) (Config, *Leader, *admittest.Flood) {
	tb.Helper()
	if limit := admittest.RaiseFileLimit(2*(floodIdle+floodDrip) + 512); limit < 2*(floodIdle+floodDrip)+512 {
		tb.Fatalf("needs %d open files, the limit is %d (raise ulimit -n)", 2*(floodIdle+floodDrip)+512, limit)
	}
	cfg := testConfig(joiners+1, logs)
	cfg.gateMax = gateMax
	l, err := Listen(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	flood := admittest.Start(l.Addr, from, floodIdle, floodDrip)
	tb.Cleanup(flood.Stop)
	// The minutes only catch a hang: on time, seconds.
	if !flood.WaitHeld(floodIdle+floodDrip, 2*time.Minute) {
		tb.Fatalf("the strangers made only %d connections", flood.Dials.Load())
	}
	for until := time.Now().Add(2 * time.Minute); flood.Drops.Load() < floodDrip; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(until) {
			tb.Fatalf("only %d strangers' connections were dropped: the slow ones were not held past the deadline", flood.Drops.Load())
		}
	}
	return cfg, l, flood
}

// Workers join rank 0 while 2,000 silent and 200 slow connections, from the worker's own
// address or another, are held against rank 0 and reconnect as soon as they are dropped.
// (Before: rank 0 served 64 handshakes at a time for 3 s each, the rest waited in the
// kernel's queue, and the worker's 10 s hello deadline ran out.) With more strangers than
// the gate holds, the surplus comes and goes, each arrival closing the oldest silent one,
// and the workers still get in. How long a join takes (about 1 s asked) is
// BenchmarkJoinWhileStrangersHoldConnections's to measure: here it is logged.
func TestJoinWhileStrangersHoldConnections(t *testing.T) {
	for _, tc := range floodCases {
		t.Run(fmt.Sprintf("from=%s/gate=%d", tc.from, tc.gateMax), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // does not hang
			defer cancel()
			cfg, l, flood := startFlood(t, tc.from, tc.gateMax, &testutil.SyncBuffer{})
			var slowest time.Duration
			for rank := 1; rank <= joiners; rank++ {
				time.Sleep(300 * time.Millisecond) // one after the other, as the strangers come and go
				c := cfg
				c.Rank = rank
				start := time.Now()
				w, err := Join(ctx, c, func(int) string { return l.Addr })
				d := time.Since(start)
				if err != nil {
					t.Fatalf("rank %d did not join after %v with %d strangers connected: %v", rank, d, flood.Held(), err)
				}
				defer w.Close()
				t.Logf("rank %d joined in %v; strangers: %d held, %d dials, %d dropped", rank, d.Round(time.Millisecond),
					flood.Held(), flood.Dials.Load(), flood.Drops.Load())
				slowest = max(slowest, d)
			}
			t.Logf("slowest join: %v", slowest.Round(time.Millisecond))
			if got := l.Connected(); len(got) != joiners {
				t.Errorf("connected: %v", got)
			}
		})
	}
}

// BenchmarkJoinWhileStrangersHoldConnections measures how long a worker takes to join rank
// 0 (ms/join, about 1 s asked; the figure TestJoinWhileStrangersHoldConnections only logs)
// while the strangers of floodCases are held against it.
//
//	go test ./jobchan -run '^$' -bench JoinWhileStrangers -benchtime 6x
func BenchmarkJoinWhileStrangersHoldConnections(b *testing.B) {
	for _, tc := range floodCases {
		b.Run(fmt.Sprintf("from=%s/gate=%d", tc.from, tc.gateMax), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cfg, l, _ := startFlood(b, tc.from, tc.gateMax, &testutil.SyncBuffer{})
			var total, slowest time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := cfg
				c.Rank = 1 + i%joiners
				start := time.Now()
				w, err := Join(ctx, c, func(int) string { return l.Addr })
				d := time.Since(start)
				if err != nil {
					b.Fatalf("join %d: %v", i, err)
				}
				total, slowest = total+d, max(slowest, d)
				b.StopTimer()
				w.Close() // says goodbye: its rank is free for the next join
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/join")
			b.ReportMetric(float64(slowest.Microseconds())/1000, "ms/slowest-join")
		})
	}
}

package fanout

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/admit/admittest"
)

// The predecessor gets through to a receiver within a second (asserted: 3 s, for -race on a
// loaded machine) while 2,000 silent and 200 slow connections, from its own address or
// another, are held against the receiver's port and reconnect as soon as they are dropped.
// (Before: 16 handshakes at a time, 5 s each, the rest in the kernel's queue: about 32
// silent peers held the predecessor off until its 2-minute connect timeout.)
func TestPredecessorGetsThroughStrangers(t *testing.T) {
	const idle, drip = 2000, 200
	if limit := admittest.RaiseFileLimit(2*(idle+drip) + 512); limit < 2*(idle+drip)+512 {
		t.Fatalf("needs %d open files, the limit is %d (raise ulimit -n)", 2*(idle+drip)+512, limit)
	}
	for _, from := range []string{"127.0.0.1", "127.0.0.2"} {
		t.Run("from="+from, func(t *testing.T) {
			noLeaks(t)
			cfgs := chainConfigs(t, 2, func(c *Config) { c.ConnectTimeout, c.HandshakeTimeout = 10*time.Second, 3*time.Second })
			rc, err := Listen(cfgs[1])
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			flood := admittest.Start("127.0.0.1:"+strconv.Itoa(rc.Port()), from, idle, drip)
			defer flood.Stop()
			if !flood.WaitHeld(idle+drip, 10*time.Second) {
				t.Fatalf("the strangers made only %d connections", flood.Dials.Load())
			}
			// Past the handshake deadline: the slow strangers are being dropped and come
			// back, as they would for as long as they are held.
			time.Sleep(cfgs[1].HandshakeTimeout + 500*time.Millisecond)
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
			if flood.Drops.Load() < drip {
				t.Errorf("only %d strangers' connections were dropped: the slow ones were not held past the deadline", flood.Drops.Load())
			}
			if d > 3*time.Second {
				t.Errorf("the predecessor took %v to get through, want within 1 s (3 s allowed under -race)", d)
			}
		})
	}
}

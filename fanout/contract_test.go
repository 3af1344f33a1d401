package fanout

import (
	"bytes"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
)

// closeSpy is a source that records being closed.
type closeSpy struct {
	*bytes.Reader
	closed atomic.Bool
}

func (c *closeSpy) Close() error { c.closed.Store(true); return nil }

// The contract doc.go states: Send never closes its source; Receive closes the receiver
// and may be called once; Close is idempotent and frees the port.
func TestContractWhoClosesWhat(t *testing.T) {
	noLeaks(t)
	data := testutil.RandomBytes(t, 1<<20+5)
	cfgs := chainConfigs(t, 2, nil)
	rc, err := Listen(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	port := rc.Port()
	done := make(chan error, 1)
	go func() {
		_, err := rc.Receive(t.Context(), (&capture{}).sink)
		done <- err
	}()
	src := &closeSpy{Reader: bytes.NewReader(data)}
	if _, err := Send(t.Context(), cfgs[0], Source{R: src, Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if src.closed.Load() {
		t.Error("Send closed its source (the caller owns it)")
	}
	if _, err := rc.Receive(t.Context(), nil); err == nil {
		t.Error("a second Receive did not fail")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("the receiver's port is still held after Receive returned: %v", err)
	}
	ln.Close()
	for i := range 2 {
		if err := rc.Close(); err != nil {
			t.Errorf("Close #%d after Receive: %v", i+1, err)
		}
	}

	// A rank that gives up before it receives: Close alone, twice, frees the port too.
	rc, err = Listen(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	port = rc.Port()
	for i := range 2 {
		if err := rc.Close(); err != nil {
			t.Errorf("Close #%d without Receive: %v", i+1, err)
		}
	}
	if ln, err = net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port))); err != nil {
		t.Fatalf("the receiver's port is still held after Close: %v", err)
	}
	ln.Close()
}

package main

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/freeport"
	"github.com/benchctl/benchctl/models/internal/example"
)

// freePort returns a TCP port that was free a moment ago, below the ephemeral range (the
// ranks dial it before rank 0 listens: a port of that range can be taken by a dial that
// connects to itself).
func freePort(t *testing.T) int {
	ports, err := freeport.Range(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// onRanks runs f(rank) for ranks 0..n-1 concurrently and returns their errors.
func onRanks(n int, f func(rank int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	return errs
}

// ringOf sets up an n-rank ring over loopback inside the test.
func ringOf(t *testing.T, n int) []*ring {
	port := freePort(t)
	rings := make([]*ring, n)
	errs := onRanks(n, func(r int) error {
		e := example.NodeEnv{Rank: r, NNodes: n, MasterAddr: "127.0.0.1", MasterPort: port}
		var err error
		rings[r], err = setupRing(e, 10*time.Second, 10*time.Second, func(string, ...any) {})
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, g := range rings {
			g.close()
		}
	})
	return rings
}

func TestRingAllReduce(t *testing.T) {
	for _, n := range []int{2, 3} {
		rings := ringOf(t, n)
		// lengths: empty, fewer elements than ranks, uneven chunks, several segments per chunk
		for _, length := range []int{0, 1, 2, 10, 1000, 3*segment/4 + 5} {
			vs := make([][]float32, n)
			want := make([]float32, length)
			for r := range n {
				vs[r] = make([]float32, length)
				for i := range vs[r] {
					vs[r][i] = float32((r*31 + i*7) % 100)
					want[i] += vs[r][i]
				}
			}
			errs := onRanks(n, func(r int) error { return rings[r].allReduce(vs[r]) })
			for r := range n {
				if errs[r] != nil {
					t.Fatalf("n=%d length=%d rank %d: %v", n, length, r, errs[r])
				}
				for i := range want {
					if vs[r][i] != want[i] {
						t.Fatalf("n=%d length=%d rank %d: element %d = %g, want %g", n, length, r, i, vs[r][i], want[i])
					}
				}
			}
		}
	}
}

// A rank that dies fails the survivors fast: they notice the closed connection, each with
// an error naming a peer rank, instead of waiting out their I/O timeout (an hour here: a
// survivor that waited for it would hang the test, and then end with a timeout).
func TestRingPeerFailure(t *testing.T) {
	rings := ringOf(t, 3)
	for _, g := range rings {
		g.ioTimeout = time.Hour
	}
	rings[2].close() // rank 2 dies
	start := time.Now()
	done := make(chan []error, 1)
	go func() { done <- onRanks(2, func(r int) error { return rings[r].allReduce(make([]float32, 1<<20)) }) }()
	var errs []error
	select {
	case errs = <-done:
	case <-time.After(2 * time.Minute): // does not hang
		t.Fatal("the survivors did not notice that rank 2 died")
	}
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank") || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("rank %d: error %v, want one naming a peer rank, not a timeout", r, err)
		}
	}
	t.Logf("the survivors noticed in %v: %v", time.Since(start).Round(time.Millisecond), errs)
}

func TestRendezvousErrors(t *testing.T) {
	quiet := func(string, ...any) {}
	port := freePort(t)
	e := example.NodeEnv{Rank: 1, NNodes: 2, MasterAddr: "127.0.0.1", MasterPort: port}
	if _, err := rendezvous(e, 1234, 300*time.Millisecond, quiet); err == nil || !strings.Contains(err.Error(), "cannot reach rank 0") {
		t.Errorf("no rank 0: %v", err)
	}
	// A worker with another NNODES is refused, and rank 0 then times out waiting for rank 1.
	errs := onRanks(2, func(r int) error {
		if r == 0 {
			_, err := rendezvous(example.NodeEnv{Rank: 0, NNodes: 2, MasterAddr: "127.0.0.1", MasterPort: port}, 1234, 2*time.Second, quiet)
			return err
		}
		_, err := rendezvous(example.NodeEnv{Rank: 1, NNodes: 3, MasterAddr: "127.0.0.1", MasterPort: port}, 1234, 2*time.Second, quiet)
		return err
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "timed out after 2s waiting for ranks 1 to register") {
		t.Errorf("rank 0: %v", errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "refused the registration: rank 1 has NNODES=3, but rank 0 has NNODES=2") {
		t.Errorf("rank 1: %v", errs[1])
	}
}

package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"log"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/fanout"
	"github.com/benchctl/benchctl/internal/freeport"
)

// figures are one run of a chain.
type figures struct {
	lastByte time.Duration // to the last sink's EOF
	hop      time.Duration // (the last rank's EOF - rank 1's EOF) / (ranks - 2): one hop's latency
	returned time.Duration // to the last rank's return
	cpu      time.Duration // user + system time of the process
	frames   int64         // most bytes in frame buffers at once, on the rank that held most
	heap     uint64        // peak heap in use above the baseline, per rank
}

// runOnce runs a chain of n ranks sending size bytes.
func runOnce(n int, size int64, frame, queue int, pace float64) figures {
	ports := freePorts(n + 8)
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = "127.0.0.1"
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cfg := func(r int) fanout.Config {
		return fanout.Config{Job: "bench.0", Rank: r, World: n, Hosts: hosts, Ports: ports, Secret: secret, FrameSize: frame, Queue: queue}
	}
	// Every receiver listens first, as the runner has them do before the image phase.
	rcs := make([]*fanout.Receiver, n)
	for r := 1; r < n; r++ {
		rc, err := fanout.Listen(cfg(r))
		timing.Check(err)
		rcs[r] = rc
	}
	runtime.GC()
	heapBase := heapInUse()
	stopSampling, peak := sampleHeap()
	ctx := context.Background()
	eof := make([]time.Duration, n)
	var wg sync.WaitGroup
	results := make([]fanout.Result, n)
	start, cpu0 := time.Now(), cpuTime()
	for r := 1; r < n; r++ {
		wg.Go(func() {
			res, err := rcs[r].Receive(ctx, func(rd io.Reader) error {
				buf := make([]byte, 256<<10)
				for {
					_, err := rd.Read(buf)
					if errors.Is(err, io.EOF) {
						eof[r] = time.Since(start)
						return nil
					}
					if err != nil {
						return err
					}
				}
			})
			if err != nil || !res.Fed || res.Bytes != size {
				log.Fatalf("rank %d: %v (fed %v, %d bytes)", r, err, res.Fed, res.Bytes)
			}
			results[r] = res
		})
	}
	res, err := fanout.Send(ctx, cfg(0), fanout.Source{R: newGen(size, pace), Size: size})
	timing.Check(err)
	results[0] = res
	wg.Wait()
	f := figures{returned: time.Since(start), cpu: cpuTime() - cpu0, lastByte: slices.Max(eof)}
	if n > 2 {
		f.hop = (eof[n-1] - eof[1]) / time.Duration(n-2)
	}
	stopSampling()
	if p := peak(); p > heapBase {
		f.heap = (p - heapBase) / uint64(n)
	}
	for _, r := range results {
		f.frames = max(f.frames, r.PeakBuffered)
	}
	return f
}

// gen is an image of size bytes: an incompressible 1 MiB block, repeated; with pace, at
// most that many MB/s.
type gen struct {
	left, sent int64
	block      []byte
	off        int
	pace       float64
	start      time.Time
}

func newGen(size int64, pace float64) *gen {
	g := &gen{left: size, block: make([]byte, 1<<20), pace: pace, start: time.Now()}
	_, _ = rand.Read(g.block)
	return g
}

func (g *gen) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left)]
	n := 0
	for n < len(p) {
		k := copy(p[n:], g.block[g.off:])
		n += k
		g.off = (g.off + k) % len(g.block)
	}
	g.left -= int64(n)
	g.sent += int64(n)
	if g.pace > 0 {
		due := g.start.Add(time.Duration(float64(g.sent) / (g.pace * 1e6) * float64(time.Second)))
		time.Sleep(time.Until(due))
	}
	return n, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	timing.Check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// sampleHeap samples the heap in use every 50 ms until stopped; peak is the largest seen.
func sampleHeap() (stop func(), peak func() uint64) {
	var p atomic.Uint64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			p.Store(max(p.Load(), heapInUse()))
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); <-done }, p.Load
}

// freePorts finds n consecutive ports free on every interface.
func freePorts(n int) []int {
	ports, err := freeport.Range(n)
	if err != nil {
		log.Fatal(err)
	}
	return ports
}

type cost struct {
	name string
	fn   func([]byte)
}

// costs are the per-byte computations of the stream, and alternatives.
func costs() []cost {
	mac := hmac.New(sha256.New, []byte("key"))
	block, _ := aes.NewCipher(make([]byte, 32))
	gcm, _ := cipher.NewGCM(block)
	nonce, out := make([]byte, gcm.NonceSize()), make([]byte, 0, 64)
	dst := make([]byte, 1<<20)
	return []cost{
		{"SHA-256 (once per rank: the frame MAC covers it)", func(b []byte) { sha256.Sum256(b) }},
		{"HMAC-SHA256 over the payload (would be twice per relay)", func(b []byte) { mac.Reset(); mac.Write(b); mac.Sum(out[:0]) }},
		{"XXH64 (the image's checksum)", func(b []byte) { xxhash.Sum64(b) }},
		{"AES-256-GCM as a MAC (GMAC; not used)", func(b []byte) { gcm.Seal(out[:0], nonce, nil, b) }},
		{"memory copy (reference)", func(b []byte) { copy(dst, b) }},
	}
}

package fanout

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/progress"
	"github.com/benchctl/benchctl/internal/testutil"
)

// Every rank's sink gets exactly the image, on chains of 2, 5 and 17 ranks sharing
// 127.0.0.1 and one port range (so every sender meets other ranks' listeners first and is
// refused by them), with sizes that are not a multiple of the frame, known or not.
func TestChain(t *testing.T) {
	for _, tc := range []struct {
		world, frame int
		size         int
		known        bool
	}{
		{2, 0, 3<<20 + 17, true},
		{5, 256 << 10, 3<<20 + 1, false},
		{17, 64 << 10, 2<<20 + 12345, true},
		{3, 0, 0, true}, // an empty image
	} {
		t.Run("", func(t *testing.T) {
			noLeaks(t)
			data := testutil.RandomBytes(t, tc.size)
			cfgs := chainConfigs(t, tc.world, func(c *Config) { c.FrameSize = tc.frame })
			caps := make([]*capture, tc.world)
			sinks := make([]func(io.Reader) error, tc.world)
			for r := 1; r < tc.world; r++ {
				caps[r] = &capture{}
				sinks[r] = caps[r].sink
			}
			size := int64(-1)
			if tc.known {
				size = int64(len(data))
			}
			out := runChain(t.Context(), t, cfgs, Source{R: bytes.NewReader(data), Size: size}, sinks, nil)
			for r, o := range out {
				if o.err != nil {
					t.Fatalf("rank %d: %v", r, o.err)
				}
				if o.res.Bytes != int64(len(data)) || o.res.XXH64 != xxhHex(data) {
					t.Errorf("rank %d: %d bytes, xxh64 %s; want %d, %s", r, o.res.Bytes, o.res.XXH64, len(data), xxhHex(data))
				}
				if o.res.Forwarded != (r < tc.world-1) {
					t.Errorf("rank %d: forwarded %v", r, o.res.Forwarded)
				}
				if r > 0 && (!o.res.Fed || !bytes.Equal(caps[r].buf.Bytes(), data) || !caps[r].cleanEOF()) {
					t.Errorf("rank %d: fed %v, sink got %d bytes (equal %v), clean EOF %v", r, o.res.Fed, caps[r].buf.Len(),
						bytes.Equal(caps[r].buf.Bytes(), data), caps[r].cleanEOF())
				}
			}
		})
	}
}

// A rank that has the image already (nil sink) only forwards, also as the last rank.
func TestNilSinkForwardsOnly(t *testing.T) {
	noLeaks(t)
	data := testutil.RandomBytes(t, 2<<20+3)
	var mu sync.Mutex
	var last progress.Report
	cfgs := chainConfigs(t, 5, func(c *Config) {
		if c.Rank == 2 {
			c.Progress = func(p progress.Report) { mu.Lock(); last = p; mu.Unlock() }
		}
	})
	caps := []*capture{nil, {}, nil, {}, nil}
	sinks := []func(io.Reader) error{nil, caps[1].sink, nil, caps[3].sink, nil}
	out := runChain(t.Context(), t, cfgs, Source{R: bytes.NewReader(data), Size: int64(len(data))}, sinks, nil)
	for r, o := range out {
		if o.err != nil {
			t.Fatalf("rank %d: %v", r, o.err)
		}
		if o.res.Fed != (caps[r] != nil) || o.res.XXH64 != xxhHex(data) {
			t.Errorf("rank %d: fed %v, xxh64 %s", r, o.res.Fed, o.res.XXH64)
		}
		if caps[r] != nil && !bytes.Equal(caps[r].buf.Bytes(), data) {
			t.Errorf("rank %d: sink got %d bytes", r, caps[r].buf.Len())
		}
	}
	if want := (progress.Report{Phase: "stream", Done: int64(len(data)), Total: int64(len(data)), Final: true}); last != want {
		t.Errorf("rank 2's last progress: %+v, want %+v", last, want)
	}
}

// A slow sink slows the chain down without deadlock, and no rank holds more than its
// budget of frames, far less than the image.
func TestSlowSinkBoundsMemory(t *testing.T) {
	noLeaks(t)
	const frame, queue = 64 << 10, 4
	data := testutil.RandomBytes(t, 16<<20)
	cfgs := chainConfigs(t, 5, func(c *Config) { c.FrameSize, c.Queue = frame, queue })
	caps := []*capture{nil, {}, {delay: 2 * time.Millisecond}, {}, {}}
	var slowAtEnd atomic.Int64 // what the slow rank 2's sink had read when rank 4's ended
	caps[4].atEOF = func() { slowAtEnd.Store(int64(caps[2].len())) }
	sinks := []func(io.Reader) error{nil, caps[1].sink, caps[2].sink, caps[3].sink, caps[4].sink}
	out := runChain(t.Context(), t, cfgs, Source{R: bytes.NewReader(data), Size: -1}, sinks, nil)
	budget := int64(poolFrames(cfgs[0]) * frame)
	for r, o := range out {
		if o.err != nil {
			t.Fatalf("rank %d: %v", r, o.err)
		}
		if r > 0 && !bytes.Equal(caps[r].buf.Bytes(), data) {
			t.Errorf("rank %d: sink got %d bytes", r, caps[r].buf.Len())
		}
		if o.res.PeakBuffered > budget || o.res.PeakBuffered > int64(len(data))/8 {
			t.Errorf("rank %d held %d bytes at once (budget %d, image %d)", r, o.res.PeakBuffered, budget, len(data))
		}
		t.Logf("rank %d: peak %d KiB in frames, done after %v", r, o.res.PeakBuffered>>10, o.at.Round(time.Millisecond))
	}
	// The slow sink paced everyone, also rank 4 after it, which can be ahead of it by no
	// more than rank 2's frames (its queues and hold-back, within its budget) and the read
	// in hand: when rank 4's sink had the whole image, rank 2's had read all but that.
	got, least := slowAtEnd.Load(), int64(len(data))-budget-frame
	t.Logf("when rank 4's sink ended, rank 2's had read %d KiB of %d KiB", got>>10, len(data)>>10)
	if got < least {
		t.Errorf("rank 4's sink ended when the slow rank 2's had read %d of %d bytes, want at least %d: the slow sink did not slow the chain",
			got, len(data), least)
	}
}

// Receivers listen in a random order, the last one 200 ms after the sender started: the
// senders retry until each finds its successor.
func TestRandomStartOrder(t *testing.T) {
	noLeaks(t)
	data := testutil.RandomBytes(t, 1<<20+5)
	cfgs := chainConfigs(t, 6, nil)
	sinks := make([]func(io.Reader) error, 6)
	caps := make([]*capture, 6)
	for r := 1; r < 6; r++ {
		caps[r] = &capture{}
		sinks[r] = caps[r].sink
	}
	delays := rand.Perm(5)
	out := runChain(t.Context(), t, cfgs, Source{R: bytes.NewReader(data), Size: int64(len(data))}, sinks,
		func(rank int) time.Duration { return time.Duration(delays[rank-1]) * 50 * time.Millisecond })
	for r, o := range out {
		if o.err != nil {
			t.Fatalf("rank %d: %v", r, o.err)
		}
		if r > 0 && !bytes.Equal(caps[r].buf.Bytes(), data) {
			t.Errorf("rank %d: sink got %d bytes", r, caps[r].buf.Len())
		}
	}
}

// Cancelling the context stops every rank (mid-stream, and while waiting for a predecessor
// that never comes), each with an error, and leaves no goroutine behind. How promptly is
// not measured; a rank that did not stop would hang the test, or end with its timeout's
// error instead of the cancel's.
func TestCancel(t *testing.T) {
	noLeaks(t)
	data := testutil.RandomBytes(t, 8<<20)
	cfgs := chainConfigs(t, 5, func(c *Config) { c.FrameSize, c.ConnectTimeout = 64<<10, 2*time.Minute })
	caps := []*capture{nil, {delay: 5 * time.Millisecond}, {}, {}, {}}
	sinks := []func(io.Reader) error{nil, caps[1].sink, caps[2].sink, caps[3].sink, caps[4].sink}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { // mid-stream: the slow sink has some of the image, and cannot have it all
		for caps[1].len() < 1<<20 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	out := runChain(ctx, t, cfgs, Source{R: bytes.NewReader(data), Size: int64(len(data))}, sinks, nil)
	for r, o := range out {
		if o.err == nil {
			t.Errorf("rank %d: no error after the cancel", r)
		}
		t.Logf("rank %d returned %v after the start: %v", r, o.at.Round(time.Millisecond), o.err)
		if r > 0 && caps[r].cleanEOF() {
			t.Errorf("rank %d: the sink saw a clean EOF", r)
		}
	}

	// A receiver whose predecessor never connects.
	rc, err := Listen(chainConfigs(t, 3, func(c *Config) { c.ConnectTimeout = 2 * time.Minute })[2])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, err := rc.Receive(ctx, (&capture{}).sink); err == nil || strings.Contains(err.Error(), "did not connect") {
		t.Errorf("waiting receiver: %v after %v", err, time.Since(start))
	}
}

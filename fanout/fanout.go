package fanout

// The image fan-out: rank 0 streams an image (a docker-archive) to every other rank of a
// job over TCP, without a shared filesystem, and every rank loads what it receives while
// it passes it on. This file holds the API and the design; fanout_wire.go the protocol,
// fanout_listen.go and fanout_link.go the two ends of a connection, fanout_run.go one rank's
// run and its failures, fanout_pipe.go and fanout_dispatch.go its pipeline,
// fanout_forward.go the side towards the successor and fanout_sink.go the loader's reader.
// Figures: docs/PERFORMANCE.md, "Image fan-out" (go run ./bench/fanout).
//
// Topology: a chain 0 -> 1 -> ... -> N-1. Every rank receives the image once and sends it
// at most once, so every link and every NIC carries it exactly once, and the chain
// pipelines: the last rank has the last byte after one transfer T plus N-1 hop latencies h.
// A tree of fan-out k is log_k(N) hops deep, but its inner ranks send k copies through one
// NIC, so it takes about k·T: the chain wins while (N-1)·h < (k-1)·T. Loopback cannot show
// the NIC side of that (every rank there shares the same CPUs, and a tree moves the same
// bytes through them); it measures h: 0.2-0.5 ms per hop with 256 KiB frames, 1.5 ms with
// 1 MiB frames. On 10 GbE (T ≈ 0.9 s for 1 GiB, h ≈ 0.2 ms on the wire + 0.2 ms of hashing)
// the chain is ahead of a binary tree up to about 2,000 ranks, and further for bigger
// images; it is also the simpler thing to keep back-pressured and to fail cleanly.
//
// Frames of 256 KiB (FrameSize): a rank must have a whole frame to check its MAC before it
// forwards it (forwarding unchecked bytes would sign a forgery for the successor), so h
// grows with the frame; 256 KiB costs within a few per cent of 1 MiB's CPU per byte (the
// per-frame overhead is small next to hashing) at a quarter of the latency.
//
// Per rank, in stages joined by small bounded queues: a reader takes frames off the
// predecessor's connection (rank 0: off its source) into buffers from a bounded pool; two
// hashers compute each frame's SHA-256 (the costly step, and frames are independent); a
// dispatcher, in order, checks each frame's MAC, keeps the image's XXH64 and hands the frame
// both to the forwarder (Queue = 8 frames to the successor) and to the sink (8 more to the
// loader). A buffer goes back to the pool when both are done with it. When either side is
// slow its queue fills, the dispatcher waits, the reader stops reading and TCP pushes back
// on the predecessor: the slowest sink sets the pace of the chain, and a rank holds at most
// poolFrames (28 frames, 7 MiB by default; 5 MiB measured) whatever the image's size.
// Nothing waits on itself: every stage drains its input to its end, also after a failure.
//
// Integrity: the sink's reader holds back the newest 1 MiB (at least; a docker-archive ends
// in 1 KiB of zeros) until the trailer's XXH64 matches what this rank computed, so a cut or
// damaged stream makes the loader's read fail and never reaches it whole; forwarding does
// not wait for that (the successor checks for itself).
//
// Authentication, as the job channel: a connection counts only after a handshake that both
// sides sign with the job secret over the job, both ranks and a nonce from each side; each
// frame then carries an HMAC-SHA256 over its sequence number, type, length and content's
// SHA-256 under a key derived from all of that, one key per direction, so frames cannot be
// injected, replayed or reordered. A relay computes a frame's SHA-256 once and uses it both
// to check the frame and to sign it for its successor: one pass of SHA-256 per byte per
// rank (1.65 GB/s per core here, with SHA-NI; XXH64 18 GB/s) where MACing the payload
// itself would take two. AES-GCM as a MAC runs at 7.4 GB/s here but needs a nonce never
// reused under a key, which a relay's own abort frames would make easy to get wrong.
//
// Failure: a failure ends the stream. The rank where it is seen sends an abort frame down
// and a fail frame up (each naming the rank it began on, and why), every rank still working
// ends with a *Error naming that rank, and their loaders' reads fail (never a clean
// EOF). A rank whose part was done (its image verified and fed, its successor's
// acknowledgement in) returns nil. Ports: each receiver listens on the first free port of
// the job's range; its predecessor tries every port of the range on its host until a
// handshake says it is the rank it wants (a listener of another rank refuses, naming
// itself), with backoff, until ConnectTimeout.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/benchctl/benchctl/internal/progress"
)

// Config is one rank's view of a fan-out; every rank of the job must pass the same
// Job, World, Hosts, Ports, Secret and FrameSize.
type Config struct {
	Job    string   // job id with attempt (at most 255 bytes); other jobs' connections are refused
	Rank   int      // this rank; 0 sends
	World  int      // ranks in the job
	Hosts  []string // where each rank can be reached (host name or address), in rank order
	Ports  []int    // the job's port range: receivers listen on the first free one
	Secret []byte   // the job secret (the job channel's)
	Log    *slog.Logger
	// FrameSize is the payload of one frame (default 256 KiB, at most 16 MiB).
	FrameSize int
	// Queue is how many frames may wait for the successor and, separately, for the sink
	// (default 8).
	Queue int
	// ConnectTimeout bounds waiting for the successor to accept and for the predecessor to
	// connect (default 2 minutes), from the call to Send or Receive; the context may
	// end it sooner. Receivers should call Receive when rank 0 is about to send (rank 0
	// building the image first can take longer than that).
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds one handshake (default 5 s) of a peer that has spoken; a
	// silent one is held while the listener has room, the first to go when it has not.
	HandshakeTimeout time.Duration
	// Progress, if not nil, is told the bytes received (sent, on rank 0), phase "stream".
	Progress progress.Func

	// SilentAfter ends waiting for the successor early (default 1 minute) when its host has
	// not answered on any port at all in that time: every connection timed out or found no
	// route (a firewall that drops the ports, a host that is down). A host that answers,
	// if only to refuse a port nobody listens on yet, is waited for until ConnectTimeout.
	SilentAfter time.Duration

	// wrap, if not nil, wraps the connection to the successor (tests inject faults).
	wrap func(net.Conn) net.Conn
	// dial, if not nil, replaces the TCP dial to the successor (tests).
	dial func(ctx context.Context, addr string) (net.Conn, error)
}

const (
	defaultFrameSize = 256 << 10
	defaultQueue     = 8
	defaultConnect   = 2 * time.Minute
	defaultHandshake = 5 * time.Second
	defaultSilent    = time.Minute
	hashers          = 2
	holdBack         = 1 << 20         // bytes the sink's reader holds back until verified
	grace            = 1 * time.Second // to send an abort or fail frame, and to linger for it
	firstByte        = time.Second     // a connection to a listener silent this long is the first to go
	dialTimeout      = 2 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.FrameSize == 0 {
		c.FrameSize = defaultFrameSize
	}
	if c.Queue == 0 {
		c.Queue = defaultQueue
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = defaultConnect
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = defaultHandshake
	}
	if c.SilentAfter == 0 {
		c.SilentAfter = defaultSilent
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.World < 1 || c.Rank < 0 || c.Rank >= c.World:
		return c, fmt.Errorf("image fan-out: rank %d of %d", c.Rank, c.World)
	case len(c.Hosts) != c.World:
		return c, fmt.Errorf("image fan-out: %d hosts for %d ranks", len(c.Hosts), c.World)
	case len(c.Ports) == 0:
		return c, errors.New("image fan-out: no ports")
	case len(c.Secret) == 0:
		return c, errors.New("image fan-out: no job secret")
	case len(c.Job) > 255:
		return c, errors.New("image fan-out: job id over 255 bytes")
	case c.FrameSize < 1 || c.FrameSize > maxFrame:
		return c, fmt.Errorf("image fan-out: frame size %d (1 to %d)", c.FrameSize, maxFrame)
	case c.Queue < 1:
		return c, fmt.Errorf("image fan-out: queue of %d frames", c.Queue)
	}
	return c, nil
}

// Source is what rank 0 sends.
type Source struct {
	R    io.Reader // the docker-archive; its Read must return when the context ends (an Engine's ImageSave body does)
	Size int64     // bytes, or -1 when unknown (a save in progress)
	// XXH64 is the expected hex checksum when known (a cache entry's): if what R gives does
	// not match, rank 0 aborts the stream instead of ending it.
	XXH64 string
}

// Result is what one rank did.
type Result struct {
	Bytes    int64         // image bytes received (rank 0: sent)
	XXH64    string        // their hex XXH64, once all arrived
	Duration time.Duration // from the call to its return
	// Fed reports that the sink read the whole image after its checksum matched and
	// returned nil; it can be true also when the call failed for another rank's failure.
	Fed bool
	// Forwarded reports that the successor acknowledged the whole image (false on the last
	// rank).
	Forwarded bool
	// PeakBuffered is the most bytes this rank held in frame buffers at once (queued to the
	// successor and the sink, held back, in flight): bounded by the configuration, not by
	// the image's size.
	PeakBuffered int64
}

// Error is a failed fan-out: where it began and why, as seen on rank Seen.
type Error struct {
	Rank   int    // the rank where the failure began (its sink failed, it sent a damaged or cut stream, it could not be reached)
	Seen   int    // the rank returning the error
	Reason string // what happened
	Err    error  // the local cause (a sink's error, the context's), nil when another rank reported it
}

func (e *Error) Error() string {
	if e.Rank == e.Seen {
		return fmt.Sprintf("image fan-out: rank %d: %s", e.Rank, e.Reason)
	}
	return fmt.Sprintf("image fan-out: rank %d: %s (seen on rank %d)", e.Rank, e.Reason, e.Seen)
}

func (e *Error) Unwrap() error { return e.Err }

// Send is rank 0's part: it sends src down the chain (computing its XXH64 as it
// goes) and returns when rank 1 has acknowledged the whole image, or at a failure (its
// own, or one that reaches it from rank 1 before that). A job of one rank sends nothing.
func Send(ctx context.Context, cfg Config, src Source) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if cfg.Rank != 0 {
		return Result{}, fmt.Errorf("image fan-out: Send on rank %d (only rank 0 sends)", cfg.Rank)
	}
	if cfg.World == 1 {
		return Result{}, nil
	}
	r := newRankRun(cfg, nil)
	r.want = src.XXH64
	return r.run(ctx, func(orderQ, hashQ chan *frame) { r.readSource(src, orderQ, hashQ) }), r.error()
}

// Receive is the part of a rank > 0: it receives the image from rank-1, forwards it to
// rank+1 and feeds sink (nil when this rank has the image already: it only forwards). The
// sink's reader fails rather than end when the stream is cut or damaged; the sink must
// return when its reader fails. Receive returns when the image was verified, the sink has
// returned and the successor acknowledged, or at a failure (this rank's, or one it hears
// of from a neighbour); it closes the receiver. Receive may be called once. With no
// deadline on ctx, a sink that stops reading stalls the whole chain (back-pressure), so
// the caller bounds the image phase.
func (rc *Receiver) Receive(ctx context.Context, sink func(io.Reader) error) (Result, error) {
	if !rc.used.CompareAndSwap(false, true) {
		return Result{}, errors.New("image fan-out: Receive called twice")
	}
	defer rc.Close()
	r := newRankRun(rc.cfg, sink)
	res := r.run(ctx, func(orderQ, hashQ chan *frame) {
		up := r.awaitUpstream(rc.upstream)
		if up == nil {
			close(orderQ)
			close(hashQ)
			return
		}
		r.readLink(up, orderQ, hashQ)
	})
	return res, r.error()
}

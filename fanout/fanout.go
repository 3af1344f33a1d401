package fanout

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

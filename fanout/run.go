package fanout

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/progress"
)

// side is where a failure came from, seen from one rank.
type side int

const (
	sideLocal side = iota // this rank: its sink, its source, its context
	sideUp                // the predecessor or before it
	sideDown              // the successor or after it
)

// rankRun is one rank's part of a fan-out: the stages of fanout.go and what they share.
type rankRun struct {
	cfg   Config
	sink  func(io.Reader) error
	pool  *framePool
	count *progress.Counter
	fwdQ  chan *frame   // to the forwarder; nil on the last rank
	sinkQ chan sinkItem // to the sink; nil without one
	want  string        // rank 0: the source's expected XXH64, if known
	ctx   context.Context
	stop  context.CancelFunc // ends dialling at the first failure

	failed chan struct{} // closed at the first failure
	once   sync.Once

	mu          sync.Mutex
	err         *Error
	from        side
	hard        bool      // cancelled: no more grace for abort and fail frames
	lingerUntil time.Time // how long the predecessor's connection is drained after a failure
	up, down    *link
	statusSent  bool // the answer to the predecessor (ok or fail) went out

	// Written by their stages before the stages end.
	bytes     int64
	sum       string
	fed       bool
	forwarded bool
}

func newRankRun(cfg Config, sink func(io.Reader) error) *rankRun {
	r := &rankRun{cfg: cfg, sink: sink, count: progress.NewCounter(cfg.Progress, "stream", 0), failed: make(chan struct{})}
	r.pool = newFramePool(cfg.FrameSize, poolFrames(cfg))
	if cfg.Rank < cfg.World-1 {
		r.fwdQ = make(chan *frame, cfg.Queue)
	}
	if sink != nil {
		r.sinkQ = make(chan sinkItem, cfg.Queue)
	}
	return r
}

// run starts the stages, produce among them (rank 0 reads its source, the others their
// predecessor's connection), supervises them and waits for all of them to end.
func (r *rankRun) run(ctx context.Context, produce func(orderQ, hashQ chan *frame)) Result {
	start := time.Now()
	r.ctx, r.stop = context.WithCancel(ctx)
	defer r.stop()
	orderQ, hashQ := make(chan *frame, hashers+2), make(chan *frame, hashers+2)
	var wg sync.WaitGroup
	if r.fwdQ != nil {
		wg.Go(r.forward)
	}
	if r.sinkQ != nil {
		wg.Go(r.feed)
	}
	for range hashers {
		wg.Go(func() { hashFrames(hashQ) })
	}
	wg.Go(func() { r.dispatch(orderQ) })
	wg.Go(func() { produce(orderQ, hashQ) })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	r.supervise(ctx, done)
	r.mu.Lock()
	if r.up != nil {
		r.up.nc.Close()
	}
	r.mu.Unlock()
	r.count.Finish()
	return Result{Bytes: r.bytes, XXH64: r.sum, Duration: time.Since(start), Fed: r.fed, Forwarded: r.forwarded,
		PeakBuffered: r.pool.peak.Load() * int64(r.cfg.FrameSize)}
}

// supervise waits for the stages; at the first failure it tells the predecessor, and when
// the context ends it cuts both connections at once.
func (r *rankRun) supervise(ctx context.Context, done <-chan struct{}) {
	failed := r.failed
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			r.fail(&Error{Rank: r.cfg.Rank, Reason: "cancelled: " + ctx.Err().Error(), Err: ctx.Err()}, sideLocal)
			r.cut()
			<-done
			return
		case <-failed:
			failed = nil
			r.afterFailure()
		}
	}
}

// fail records the first failure and starts ending every stage.
func (r *rankRun) fail(e *Error, from side) {
	r.once.Do(func() {
		e.Seen = r.cfg.Rank
		r.mu.Lock()
		r.err, r.from = e, from
		r.lingerUntil = time.Now().Add(grace)
		r.mu.Unlock()
		r.cfg.Log.Debug("image fan-out: failed", "rank", r.cfg.Rank, "origin", e.Rank, "reason", e.Reason)
		close(r.failed)
		r.stop()
	})
}

// failf records a failure that began on rank origin.
func (r *rankRun) failf(origin int, from side, cause error, format string, args ...any) {
	r.fail(&Error{Rank: origin, Reason: fmt.Sprintf(format, args...), Err: cause}, from)
}

func (r *rankRun) isFailed() bool {
	select {
	case <-r.failed:
		return true
	default:
		return false
	}
}

// error is the first failure, or nil.
func (r *rankRun) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return nil
	}
	return r.err
}

// afterFailure tells the predecessor why (unless it already had its answer), drains its
// connection for the grace period so that the answer is read rather than reset, and gives
// the forwarder's write in progress the same grace, after which it is cut.
func (r *rankRun) afterFailure() {
	r.mu.Lock()
	up, e := r.up, r.err
	tell := up != nil && !r.statusSent && !r.hard
	r.statusSent = r.statusSent || tell
	if r.down != nil && !r.hard {
		_ = r.down.nc.SetWriteDeadline(time.Now().Add(grace))
	}
	r.mu.Unlock()
	if up == nil {
		return
	}
	if tell {
		r.deadline(up, grace)
		if err := up.writeControl(statusFail, failPayload(e.Rank, e.Reason)); err != nil {
			r.cfg.Log.Debug("image fan-out: telling the predecessor failed", "rank", r.cfg.Rank, "err", err)
		}
	}
	r.mu.Lock()
	_ = up.nc.SetReadDeadline(r.lingerUntil)
	r.mu.Unlock()
}

// cut ends both connections now: the context ended.
func (r *rankRun) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.hard, r.lingerUntil = true, now
	for _, l := range []*link{r.up, r.down} {
		if l != nil {
			_ = l.nc.SetDeadline(now)
		}
	}
}

// deadline sets a link's write deadline d from now, or to now once the run was cut.
func (r *rankRun) deadline(l *link, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := time.Now()
	if !r.hard {
		t = t.Add(d)
	}
	_ = l.nc.SetWriteDeadline(t)
}

// sendOK tells the predecessor that the whole image arrived and matched.
func (r *rankRun) sendOK(n int64) {
	r.mu.Lock()
	up, send := r.up, !r.statusSent && r.up != nil
	r.statusSent = true
	r.mu.Unlock()
	if send {
		r.deadline(up, r.cfg.HandshakeTimeout)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n))
		if err := up.writeControl(statusOK, b[:]); err != nil {
			r.cfg.Log.Debug("image fan-out: acknowledging failed", "rank", r.cfg.Rank, "err", err)
		}
	}
}

// setLink records a connection (up or down) unless the run was cut, and reports whether it
// did.
func (r *rankRun) setLink(p **link, l *link) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hard {
		l.nc.Close()
		return false
	}
	*p = l
	return true
}

// awaitUpstream waits for the predecessor's connection.
func (r *rankRun) awaitUpstream(ch <-chan *link) *link {
	t := time.NewTimer(r.cfg.ConnectTimeout)
	defer t.Stop()
	prev := r.cfg.Rank - 1
	select {
	case l := <-ch:
		if r.setLink(&r.up, l) {
			r.cfg.Log.Debug("image fan-out: predecessor connected", "rank", r.cfg.Rank, "from", l.nc.RemoteAddr().String())
			return l
		}
	case <-t.C:
		r.failf(prev, sideUp, nil, "did not connect to rank %d (%s) within %s", r.cfg.Rank, r.cfg.Hosts[r.cfg.Rank], r.cfg.ConnectTimeout)
	case <-r.failed:
	}
	return nil
}

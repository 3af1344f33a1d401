package fanout

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// frame is one frame on its way through a rank. Data frames live in pooled buffers and are
// released when both the forwarder and the sink are done with them (refs).
type frame struct {
	typ    byte
	buf    []byte // the pooled buffer (data frames)
	data   []byte // the payload
	digest [32]byte
	tag    [tagSize]byte
	hashed chan struct{} // a token once digest is set
	refs   atomic.Int32
	pooled bool
	err    error // set on the producer's last item instead of a frame: why it ended
}

func controlFrame(typ byte, payload []byte) *frame {
	f := &frame{typ: typ, data: payload, digest: sha256.Sum256(payload), hashed: make(chan struct{}, 1)}
	f.hashed <- struct{}{}
	return f
}

// framePool hands out at most max frame buffers, made when first needed; get waits for a
// free one. That wait is the back-pressure that bounds a rank's memory.
type framePool struct {
	size, max   int
	free        chan *frame
	mu          sync.Mutex
	made        int
	inUse, peak atomic.Int64
}

// poolFrames is a rank's buffer budget: both queues full, the sink's hold-back, and one
// frame in each stage between them (reader, hashers, dispatcher, forwarder, sink).
func poolFrames(cfg Config) int {
	hold := (holdBack+cfg.FrameSize-1)/cfg.FrameSize + 1
	return 2*cfg.Queue + hold + hashers + 5
}

func newFramePool(size, max int) *framePool {
	return &framePool{size: size, max: max, free: make(chan *frame, max)}
}

// get returns a buffer, or nil when stop closes first.
func (p *framePool) get(stop <-chan struct{}) *frame {
	var f *frame
	select {
	case f = <-p.free:
	default:
		p.mu.Lock()
		if p.made < p.max {
			p.made++
			f = &frame{buf: make([]byte, p.size), hashed: make(chan struct{}, 1), pooled: true}
		}
		p.mu.Unlock()
		if f == nil {
			select {
			case f = <-p.free:
			case <-stop:
				return nil
			}
		}
	}
	n := p.inUse.Add(1)
	for {
		if old := p.peak.Load(); n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	return f
}

func (p *framePool) put(f *frame) {
	p.inUse.Add(-1)
	p.free <- f
}

// release drops one holder's claim on a frame.
func (r *rankRun) release(f *frame) {
	if f.pooled && f.refs.Add(-1) == 0 {
		r.pool.put(f)
	}
}

// hashFrames computes the SHA-256 of data frames, as many at once as there are hashers.
func hashFrames(q <-chan *frame) {
	for f := range q {
		f.digest = sha256.Sum256(f.data)
		f.hashed <- struct{}{}
	}
}

// readLink takes frames off the predecessor's connection until its end (a trailer or an
// abort), an error, or this rank's failure (then it drains the connection for the grace
// period, so that the fail frame sent back is read, not reset).
func (r *rankRun) readLink(up *link, orderQ, hashQ chan *frame) {
	defer close(orderQ)
	defer close(hashQ)
	for !r.isFailed() {
		typ, n, err := up.readHeader(r.cfg.FrameSize, "SDTA")
		if err != nil {
			orderQ <- &frame{err: err}
			return
		}
		var f *frame
		if typ == frameData {
			if f = r.pool.get(r.failed); f == nil {
				break
			}
			f.typ, f.data = typ, f.buf[:n]
		} else {
			f = &frame{typ: typ, data: make([]byte, n), hashed: make(chan struct{}, 1)}
		}
		if err := up.readBody(f.data, &f.tag); err != nil {
			if f.pooled {
				r.pool.put(f)
			}
			orderQ <- &frame{err: err}
			return
		}
		if typ == frameData {
			r.count.Add(n)
			hashQ <- f
		} else {
			f.digest = sha256.Sum256(f.data)
			f.hashed <- struct{}{}
		}
		orderQ <- f
		if typ == frameTrailer || typ == frameAbort {
			return
		}
	}
	r.mu.Lock()
	_ = up.nc.SetReadDeadline(r.lingerUntil)
	r.mu.Unlock()
	_, _ = io.Copy(io.Discard, up.br)
}

// readSource is rank 0's producer: the start frame, the source in frames, then an item
// saying how it ended (io.EOF at its end).
func (r *rankRun) readSource(src Source, orderQ, hashQ chan *frame) {
	defer close(orderQ)
	defer close(hashQ)
	if src.Size >= 0 {
		r.count.SetTotal(src.Size)
	}
	orderQ <- controlFrame(frameStart, binary.BigEndian.AppendUint64(nil, uint64(src.Size)))
	for !r.isFailed() {
		f := r.pool.get(r.failed)
		if f == nil {
			return
		}
		n, err := io.ReadFull(src.R, f.buf)
		if n > 0 {
			f.typ, f.data = frameData, f.buf[:n]
			r.count.Add(n)
			hashQ <- f
			orderQ <- f
		} else {
			r.pool.put(f)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			orderQ <- &frame{err: io.EOF}
			return
		}
		if err != nil {
			orderQ <- &frame{err: err}
			return
		}
	}
}

// hand passes a frame to the forwarder and (data frames) to the sink.
func (r *rankRun) hand(f *frame) {
	toSink := f.typ == frameData && r.sinkQ != nil
	refs := int32(0)
	if r.fwdQ != nil {
		refs++
	}
	if toSink {
		refs++
	}
	if refs == 0 {
		if f.pooled {
			r.pool.put(f)
		}
		return
	}
	f.refs.Store(refs)
	if r.fwdQ != nil {
		select {
		case r.fwdQ <- f:
		case <-r.failed:
			r.release(f)
		}
	}
	if toSink {
		select {
		case r.sinkQ <- sinkItem{f: f}:
		case <-r.failed:
			r.release(f)
		}
	}
}

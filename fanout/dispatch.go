package fanout

import (
	"crypto/hmac"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// dispatch takes the frames in order: checks each one's MAC (receivers), keeps the count
// and the XXH64, checks the end, and hands them on. It drains orderQ to its end, also after
// a failure.
func (r *rankRun) dispatch(orderQ chan *frame) {
	defer func() {
		if r.fwdQ != nil {
			close(r.fwdQ)
		}
		if r.sinkQ != nil {
			close(r.sinkQ)
		}
	}()
	d := &dispatcher{r: r, x: xxhash.New(), size: -1}
	for f := range orderQ {
		if f.err == nil {
			<-f.hashed
		}
		if r.isFailed() || d.ended {
			if f.pooled {
				r.pool.put(f)
			}
			continue
		}
		if r.cfg.Rank == 0 {
			d.source(f)
		} else {
			d.receive(f)
		}
	}
}

// dispatcher is the state of dispatch.
type dispatcher struct {
	r       *rankRun
	x       *xxhash.Digest
	n, size int64
	started bool
	ended   bool
	in      *macSeq
	seq     int
}

func (d *dispatcher) sum() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], d.x.Sum64())
	return hex.EncodeToString(b[:])
}

func (d *dispatcher) data(f *frame) {
	d.n += int64(len(f.data))
	d.x.Write(f.data)
	d.r.hand(f)
}

// end hands on the trailer after a whole image.
func (d *dispatcher) end(f *frame) {
	r := d.r
	d.ended = true
	r.bytes, r.sum = d.n, d.sum()
	if r.cfg.Rank > 0 {
		r.sendOK(d.n)
	}
	if r.sinkQ != nil {
		select {
		case r.sinkQ <- sinkItem{end: true}:
		case <-r.failed:
		}
	}
	r.hand(f)
}

func (d *dispatcher) verify(f *frame) bool {
	if d.in == nil {
		d.r.mu.Lock()
		d.in = d.r.up.in
		d.r.mu.Unlock()
	}
	d.seq++
	return hmac.Equal(f.tag[:], d.in.next(f.typ, len(f.data), &f.digest))
}

// receive is a receiving rank's dispatcher step: the frame must authenticate and follow
// start, data..., trailer (or abort); the trailer must match what arrived.
func (d *dispatcher) receive(f *frame) {
	r := d.r
	prev := r.cfg.Rank - 1
	if f.err != nil {
		var fe *frameError
		if errors.As(f.err, &fe) {
			r.failf(prev, sideUp, f.err, "sent a malformed frame: %s", fe.why)
		} else {
			r.failf(prev, sideUp, f.err, "connection to rank %d lost after %d bytes: %v", r.cfg.Rank, d.n, f.err)
		}
		return
	}
	if !d.verify(f) {
		r.failf(prev, sideUp, nil, "frame %d to rank %d failed authentication (damaged on the way, or forged)", d.seq-1, r.cfg.Rank)
		d.drop(f)
		return
	}
	bad := func(format string, args ...any) {
		r.failf(prev, sideUp, nil, "sent a malformed stream: "+format, args...)
		d.drop(f)
	}
	switch f.typ {
	case frameStart:
		if d.started {
			bad("a second start frame")
			return
		}
		d.started, d.size = true, int64(binary.BigEndian.Uint64(f.data))
		if d.size >= 0 {
			r.count.SetTotal(d.size)
		}
		r.hand(f)
	case frameData:
		switch {
		case !d.started:
			bad("data before the start frame")
		case d.size >= 0 && d.n+int64(len(f.data)) > d.size:
			bad("more than the %d bytes it announced", d.size)
		default:
			d.data(f)
		}
	case frameTrailer:
		size, sum := int64(binary.BigEndian.Uint64(f.data)), binary.BigEndian.Uint64(f.data[8:])
		switch {
		case !d.started:
			bad("a trailer before the start frame")
		case size != d.n || (d.size >= 0 && d.size != d.n):
			r.failf(prev, sideUp, nil, "the image ended after %d bytes, the trailer says %d (announced %d)", d.n, size, d.size)
		case sum != d.x.Sum64():
			r.failf(prev, sideUp, nil, "checksum mismatch: xxh64 %s, rank 0 sent %016x (damaged after rank %d checked it)", d.sum(), sum, prev)
		default:
			d.end(f)
		}
	case frameAbort:
		origin, reason := parseFail(f.data)
		r.fail(&Error{Rank: origin, Reason: reason}, sideUp)
	}
}

// source is rank 0's dispatcher step: the source's frames, then the trailer at its end
// (or a failure when it fails, or does not match its size or expected checksum).
func (d *dispatcher) source(f *frame) {
	r := d.r
	switch {
	case errors.Is(f.err, io.EOF):
		sum := d.sum()
		switch {
		case d.size >= 0 && d.n != d.size:
			r.failf(0, sideLocal, nil, "the image source ended after %d bytes, expected %d", d.n, d.size)
		case r.want != "" && !strings.EqualFold(r.want, sum):
			r.failf(0, sideLocal, nil, "the image source's xxh64 is %s, expected %s (damaged?)", sum, short(r.want))
		default:
			p := binary.BigEndian.AppendUint64(nil, uint64(d.n))
			d.end(controlFrame(frameTrailer, binary.BigEndian.AppendUint64(p, d.x.Sum64())))
		}
	case f.err != nil:
		r.failf(0, sideLocal, f.err, "reading the image: %v", f.err)
	case f.typ == frameStart:
		d.started, d.size = true, int64(binary.BigEndian.Uint64(f.data))
		r.hand(f)
	case d.size >= 0 && d.n+int64(len(f.data)) > d.size:
		r.failf(0, sideLocal, nil, "the image source gave more than the %d bytes expected", d.size)
		d.drop(f)
	default:
		d.data(f)
	}
}

func (d *dispatcher) drop(f *frame) {
	if f.pooled {
		d.r.pool.put(f)
	}
}

// short is the start of a hex checksum, as messages show it (image's cache does the same).
func short(s string) string { return s[:min(len(s), 16)] }

package fanout

import (
	"context"
	"encoding/binary"
	"sync"
	"time"
)

// fanStatus is the successor's answer (ok or fail), or how its connection ended.
type fanStatus struct {
	typ byte
	p   []byte
	err error
}

// forward connects to the successor and writes it every frame the dispatcher hands on;
// after the trailer it waits for the successor's acknowledgement, and after a failure that
// did not come from there it sends an abort frame instead. A fail frame from the successor
// can come at any time. It drains fwdQ to its end.
func (r *rankRun) forward() {
	defer func() {
		for f := range r.fwdQ {
			r.release(f)
		}
	}()
	l := r.connect()
	if l == nil {
		r.lateAbort()
		return
	}
	statusC := make(chan fanStatus, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		typ, p, err := l.readControl("KF")
		statusC <- fanStatus{typ, p, err}
	})
	defer wg.Wait()
	defer l.nc.Close()
	answered, sentEnd, broken := false, false, false
loop:
	for {
		select {
		case f, ok := <-r.fwdQ:
			if !ok {
				break loop
			}
			if r.isFailed() {
				r.release(f)
				break loop
			}
			typ := f.typ
			err := l.write(typ, f.data, &f.digest)
			r.release(f)
			if err != nil {
				broken = true
				answered = r.lost(statusC, err)
				break loop
			}
			if typ == frameTrailer {
				sentEnd = true
				break loop
			}
		case s := <-statusC:
			answered = true
			r.answered(s, false)
			break loop
		case <-r.failed:
			break loop
		}
	}
	switch {
	case sentEnd:
		select {
		case s := <-statusC:
			r.answered(s, true)
		case <-r.failed:
		}
	case !answered && !broken && r.isFailed() && r.failedFrom() != sideDown:
		r.abortDown(l, statusC)
	}
}

// answered handles the successor's status: a fail frame ends this rank with the failure it
// names; an acknowledgement is expected only at the end (atEnd), for every byte.
func (r *rankRun) answered(s fanStatus, atEnd bool) {
	next := r.cfg.Rank + 1
	switch {
	case s.err == nil && s.typ == statusFail:
		origin, reason := parseFail(s.p)
		r.fail(&Error{Rank: origin, Reason: reason}, sideDown)
	case s.err == nil && !atEnd:
		r.failf(next, sideDown, nil, "acknowledged before the end of the image")
	case s.err == nil && int64(binary.BigEndian.Uint64(s.p)) != r.bytes:
		r.failf(next, sideDown, nil, "acknowledged %d bytes of %d", binary.BigEndian.Uint64(s.p), r.bytes)
	case s.err == nil:
		r.forwarded = true
	default:
		r.failf(next, sideDown, s.err, "connection from rank %d lost before it acknowledged the image: %v", r.cfg.Rank, s.err)
	}
}

// lost handles a failed write to the successor: unless this rank's own failure cut it, the
// successor is gone, perhaps after saying why (it reports whether statusC was consumed).
func (r *rankRun) lost(statusC <-chan fanStatus, err error) bool {
	if r.isFailed() {
		return false
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case s := <-statusC:
		if s.err == nil && s.typ == statusFail {
			r.answered(s, false)
			return true
		}
		r.failf(r.cfg.Rank+1, sideDown, err, "connection from rank %d lost: %v", r.cfg.Rank, err)
		return true
	case <-t.C:
	case <-r.failed:
		return false
	}
	r.failf(r.cfg.Rank+1, sideDown, err, "connection from rank %d lost: %v", r.cfg.Rank, err)
	return false
}

// abortDown tells the successor why the stream ends, then waits (within the grace) for it
// to close, so that the abort frame is read rather than reset.
func (r *rankRun) abortDown(l *link, statusC <-chan fanStatus) {
	r.mu.Lock()
	e := *r.err
	r.mu.Unlock()
	r.deadline(l, grace)
	if err := l.writeControl(frameAbort, failPayload(e.Rank, e.Reason)); err != nil {
		return
	}
	if cw, ok := l.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	r.mu.Lock()
	if !r.hard {
		_ = l.nc.SetReadDeadline(time.Now().Add(grace))
	}
	r.mu.Unlock()
	<-statusC
}

// lateAbort tells the successor why the stream ends when this rank failed before it had
// reached it: the successor would otherwise wait its whole ConnectTimeout and then blame
// this rank. It connects within twice the grace and sends the abort; a successor that
// cannot be reached in that time is left to its own timeout.
func (r *rankRun) lateAbort() {
	r.mu.Lock()
	hard := r.hard
	r.mu.Unlock()
	if !r.isFailed() || hard || r.failedFrom() == sideDown {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*grace)
	defer cancel()
	l := r.connectWithin(ctx, 2*grace)
	if l == nil {
		return
	}
	defer l.nc.Close()
	statusC := make(chan fanStatus, 1)
	go func() {
		typ, p, err := l.readControl("KF")
		statusC <- fanStatus{typ, p, err}
	}()
	r.abortDown(l, statusC)
}

func (r *rankRun) failedFrom() side {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.from
}

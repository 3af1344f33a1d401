package fanout

import (
	"errors"
	"io"
	"sync"
)

// sinkItem is what the dispatcher queues for the sink: a data frame, or the end (the
// whole image arrived and its checksum matched). A failure ends the queue without an end.
type sinkItem struct {
	f   *frame
	end bool
}

// sinkReader is the reader a rank's sink (the engine's load) gets. It always holds back the
// newest holdBack bytes (or more: whole frames) and hands them out only after the end
// arrived verified, so a cut or damaged stream makes Read fail and never reaches the
// loader whole; it never returns io.EOF otherwise. Reads may come from any goroutine (an
// HTTP transport reads a request body on its own, possibly after the response came);
// after close they fail.
type sinkReader struct {
	r         *rankRun
	mu        sync.Mutex
	held      []*frame // newest frames, not yet handed out
	heldBytes int
	ready     []*frame // handed out in order
	off       int      // into ready[0]
	ended     bool     // the end arrived: everything is ready
	err       error
	closed    bool
}

func (s *sinkReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed {
			return 0, errors.New("image fan-out: read after the sink returned")
		}
		if len(s.ready) > 0 {
			f := s.ready[0]
			n := copy(p, f.data[s.off:])
			if s.off += n; s.off == len(f.data) {
				s.r.release(f)
				s.ready, s.off = s.ready[1:], 0
			}
			return n, nil
		}
		switch {
		case s.ended:
			return 0, io.EOF
		case s.err != nil:
			return 0, s.err
		}
		s.next()
	}
}

// next takes the next item of the queue (preferring it to a failure, so that an image
// verified before a failure elsewhere is still handed out whole).
func (s *sinkReader) next() {
	var it sinkItem
	var ok bool
	select {
	case it, ok = <-s.r.sinkQ:
	default:
		select {
		case it, ok = <-s.r.sinkQ:
		case <-s.r.failed:
			s.err = s.r.error()
			return
		}
	}
	switch {
	case !ok:
		if s.err = s.r.error(); s.err == nil {
			s.err = io.ErrUnexpectedEOF // cannot happen: the queue ends without an end only on failure
		}
	case it.end:
		s.ready, s.held, s.ended = append(s.ready, s.held...), nil, true
	default:
		s.held = append(s.held, it.f)
		s.heldBytes += len(it.f.data)
		for len(s.held) > 1 && s.heldBytes-len(s.held[0].data) >= holdBack {
			s.heldBytes -= len(s.held[0].data)
			s.ready = append(s.ready, s.held[0])
			s.held = s.held[1:]
		}
	}
}

// close releases what the reader holds and reports whether the end arrived.
func (s *sinkReader) close() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, f := range append(s.ready, s.held...) {
		s.r.release(f)
	}
	s.ready, s.held = nil, nil
	return s.ended
}

// feed runs the sink on a sinkReader, then drains the queue to its end. A sink's error
// fails the rank (unless a failure came first: then it is the sink's reader's).
func (r *rankRun) feed() {
	s := &sinkReader{r: r}
	err := r.sink(s)
	ended := s.close()
	if err != nil {
		r.failf(r.cfg.Rank, sideLocal, err, "loading the image: %v", err)
	}
	for it := range r.sinkQ {
		if it.end {
			ended = true
		} else {
			r.release(it.f)
		}
	}
	r.fed = err == nil && ended
}

package image

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"sync/atomic"
)

// chunkSize is the unit of the hashing pipelines below; also how much of a tar's end is
// held back until its checksum is verified (a docker-archive ends with at least 1 KiB of
// zero blocks, so an engine never sees a complete archive from a corrupt tar).
const chunkSize = 1 << 20

// hashingWriter hands what is written to two goroutines in chunkSize pieces: one writes
// them to w, the other hashes them, so that receiving the next bytes, writing and hashing
// all overlap. Close must be called; Sum after it.
type hashingWriter struct {
	w    io.Writer
	h    hash.Hash
	buf  []byte
	wq   chan *hchunk
	hq   chan *hchunk
	free chan []byte
	done sync.WaitGroup
	mu   sync.Mutex
	err  error // the first write error
}

type hchunk struct {
	b    []byte
	refs atomic.Int32
}

func newHashingWriter(w io.Writer) *hashingWriter {
	const buffers = 8
	hw := &hashingWriter{w: w, h: sha256.New(), wq: make(chan *hchunk, buffers), hq: make(chan *hchunk, buffers), free: make(chan []byte, buffers)}
	for range buffers - 1 {
		hw.free <- make([]byte, 0, chunkSize)
	}
	hw.buf = make([]byte, 0, chunkSize)
	hw.done.Add(2)
	go func() { // writer
		defer hw.done.Done()
		for c := range hw.wq {
			if hw.failed() == nil {
				if _, err := hw.w.Write(c.b); err != nil {
					hw.mu.Lock()
					hw.err = err
					hw.mu.Unlock()
				}
			}
			hw.release(c)
		}
	}()
	go func() { // hasher
		defer hw.done.Done()
		for c := range hw.hq {
			hw.h.Write(c.b)
			hw.release(c)
		}
	}()
	return hw
}

func (hw *hashingWriter) release(c *hchunk) {
	if c.refs.Add(-1) == 0 {
		hw.free <- c.b[:0]
	}
}

func (hw *hashingWriter) failed() error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw.err
}

func (hw *hashingWriter) Write(p []byte) (int, error) {
	if err := hw.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(hw.buf[len(hw.buf):cap(hw.buf)], p)
		hw.buf = hw.buf[:len(hw.buf)+k]
		p = p[k:]
		if len(hw.buf) == cap(hw.buf) {
			hw.flush()
		}
	}
	return n, nil
}

func (hw *hashingWriter) flush() {
	if len(hw.buf) == 0 {
		return
	}
	c := &hchunk{b: hw.buf}
	c.refs.Store(2)
	hw.wq <- c
	hw.hq <- c
	hw.buf = <-hw.free
}

// Close hands on what is buffered, waits for the writer and the hasher, and returns the
// first write error.
func (hw *hashingWriter) Close() error {
	hw.flush()
	close(hw.wq)
	close(hw.hq)
	hw.done.Wait()
	return hw.failed()
}

// Sum is the hex sha256 of everything written; valid after Close.
func (hw *hashingWriter) Sum() string { return hex.EncodeToString(hw.h.Sum(nil)) }

// verifyingReader reads r ahead on another goroutine, hashing it, and hands the bytes on,
// always holding back the newest chunk: the last chunk is released only after the whole
// input matched the expected sha256. On a mismatch Read fails instead, so a consumer (the
// engine's load) never receives a complete corrupt tar.
type verifyingReader struct {
	ch       chan chunk
	stop     chan struct{}
	free     chan []byte
	cur      []byte // being handed out
	curBuf   []byte // backing buffer of cur, returned to free when used up
	held     []byte // newest chunk, held back
	finished bool
	verified bool
	mismatch string
	n        int64
	counter  *counter
}

type chunk struct {
	data     []byte
	final    bool // the input ended and matched
	err      error
	mismatch string
}

func newVerifyingReader(r io.Reader, want string, c *counter) *verifyingReader {
	v := &verifyingReader{ch: make(chan chunk, 4), stop: make(chan struct{}), free: make(chan []byte, 8), counter: c}
	for range 7 {
		v.free <- make([]byte, chunkSize)
	}
	go v.produce(r, want)
	return v
}

func (v *verifyingReader) send(c chunk) bool {
	select {
	case v.ch <- c:
		return true
	case <-v.stop:
		return false
	}
}

func (v *verifyingReader) produce(r io.Reader, want string) {
	h := sha256.New()
	for {
		var buf []byte
		select {
		case buf = <-v.free:
		case <-v.stop:
			return
		}
		n, err := io.ReadFull(r, buf[:chunkSize])
		if n > 0 {
			h.Write(buf[:n])
			if !v.send(chunk{data: buf[:n]}) {
				return
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if got := hex.EncodeToString(h.Sum(nil)); got != want {
				v.send(chunk{err: fmt.Errorf("checksum mismatch: sha256 %s, expected %s", short(got), short(want)), mismatch: got})
				return
			}
			v.send(chunk{final: true})
			return
		}
		if err != nil {
			v.send(chunk{err: err})
			return
		}
	}
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	for len(v.cur) == 0 {
		if v.curBuf != nil {
			v.free <- v.curBuf[:cap(v.curBuf)]
			v.curBuf = nil
		}
		if v.finished {
			return 0, io.EOF
		}
		c, ok := <-v.ch
		if !ok {
			return 0, errors.New("verifying reader closed")
		}
		switch {
		case c.err != nil:
			v.mismatch = c.mismatch
			v.finished = true
			return 0, c.err
		case c.final:
			v.verified, v.finished = true, true
			v.cur, v.curBuf, v.held = v.held, v.held, nil
		default:
			v.cur, v.curBuf, v.held = v.held, v.held, c.data
		}
	}
	n := copy(p, v.cur)
	v.cur = v.cur[n:]
	v.n += int64(n)
	v.counter.add(n)
	return n, nil
}

// Close stops the read-ahead goroutine.
func (v *verifyingReader) Close() error {
	select {
	case <-v.stop:
	default:
		close(v.stop)
	}
	return nil
}

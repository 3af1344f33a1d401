package image

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// chunkSize is the unit of the hashing pipelines below; also how much of a tar's end is
// held back until its checksum is verified (a docker-archive ends with at least 1 KiB of
// zero blocks, so an engine never sees a complete archive from a corrupt tar).
const chunkSize = 1 << 20

// hashingWriter writes to w in chunkSize pieces and hashes them on another goroutine, so
// that hashing overlaps with receiving the next bytes. Close must be called; Sum after it.
type hashingWriter struct {
	w    io.Writer
	h    hash.Hash
	buf  []byte
	work chan []byte
	free chan []byte
	done chan struct{}
	err  error
}

func newHashingWriter(w io.Writer) *hashingWriter {
	hw := &hashingWriter{w: w, h: sha256.New(), work: make(chan []byte, 4), free: make(chan []byte, 6), done: make(chan struct{})}
	for range 5 {
		hw.free <- make([]byte, 0, chunkSize)
	}
	hw.buf = make([]byte, 0, chunkSize)
	go func() {
		defer close(hw.done)
		for b := range hw.work {
			hw.h.Write(b)
			hw.free <- b[:0]
		}
	}()
	return hw
}

func (hw *hashingWriter) Write(p []byte) (int, error) {
	if hw.err != nil {
		return 0, hw.err
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(hw.buf[len(hw.buf):cap(hw.buf)], p)
		hw.buf = hw.buf[:len(hw.buf)+k]
		p = p[k:]
		if len(hw.buf) == cap(hw.buf) {
			if err := hw.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (hw *hashingWriter) flush() error {
	if len(hw.buf) == 0 {
		return nil
	}
	if _, err := hw.w.Write(hw.buf); err != nil {
		hw.err = err
		return err
	}
	hw.work <- hw.buf
	hw.buf = <-hw.free
	return nil
}

// Close writes what is buffered and waits for the hasher.
func (hw *hashingWriter) Close() error {
	err := hw.flush()
	close(hw.work)
	<-hw.done
	return err
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

package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/benchctl/benchctl/internal/progress"
)

// chunkSize is the unit of the hashing pipelines below; also how much of a tar's end is
// held back until its checksum is verified (a docker-archive ends with at least 1 KiB of
// zero blocks, so an engine never sees a complete archive from a corrupt tar).
const chunkSize = 1 << 20

// hashingWriter hands what is written to two goroutines in chunkSize pieces: one writes
// them to w, the other hashes them (sha256 and XXH64), so that receiving the next bytes,
// writing and hashing all overlap. Close must be called; Sum and XXH64 after it.
type hashingWriter struct {
	w    io.Writer
	h    hash.Hash
	x    *xxhash.Digest
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
	hw := &hashingWriter{w: w, h: sha256.New(), x: xxhash.New(), wq: make(chan *hchunk, buffers), hq: make(chan *hchunk, buffers), free: make(chan []byte, buffers)}
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
			hw.x.Write(c.b)
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

// XXH64 is the hex XXH64 of everything written; valid after Close.
func (hw *hashingWriter) XXH64() string { return hex.EncodeToString(hw.x.Sum(nil)) }

// checksum is one of the hashes a cache entry records, with its expected hex value.
type checksum struct {
	Algo string // "sha256" or "xxh64"
	Want string
}

func (c checksum) hash() hash.Hash {
	if c.Algo == "xxh64" {
		return xxhash.New()
	}
	return sha256.New()
}

// verifyingReader hands r on while hashing it, always holding back the newest chunk
// (chunkSize bytes): the last chunk is released only after the whole input matched the
// expected checksum. On a mismatch Read fails instead, so a consumer (the engine's load)
// never receives a complete corrupt tar. Reading and hashing happen inline, on the
// consumer's goroutine: on a busy node a hand-off to another goroutine costs more than it
// overlaps. An HTTP request body is read on the transport's goroutine, possibly still after
// the response came: Close (the transport's, when it is done with the body) and outcome let
// the caller wait for that before it looks at the result.
type verifyingReader struct {
	mu       sync.Mutex
	closed   chan struct{}
	once     sync.Once
	r        io.Reader
	sum      checksum
	h        hash.Hash
	bufs     [2][]byte
	hi       int    // which of bufs holds held
	cur      []byte // being handed out
	held     []byte // newest chunk, held back
	tail     []byte // after a match: the last chunk, handed out after cur
	finished bool
	verified bool
	mismatch string // the hex checksum read, when it did not match
	err      error
	n        int64
	counter  *progress.Counter
	// onVerified is called (on the reading goroutine) when the whole input matched, before
	// its last chunk is handed on.
	onVerified func()
}

func newVerifyingReader(r io.Reader, sum checksum, c *progress.Counter) *verifyingReader {
	v := &verifyingReader{r: r, sum: sum, h: sum.hash(), counter: c, closed: make(chan struct{})}
	v.bufs[0], v.bufs[1] = make([]byte, chunkSize), make([]byte, chunkSize)
	return v
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for len(v.cur) == 0 {
		switch {
		case len(v.tail) > 0:
			v.cur, v.tail = v.tail, nil
		case v.err != nil:
			return 0, v.err
		case v.finished:
			return 0, io.EOF
		default:
			v.fill()
		}
	}
	n := copy(p, v.cur)
	v.cur = v.cur[n:]
	v.n += int64(n)
	return n, nil
}

// fill reads and hashes the next chunk into the buffer that is not holding held (cur,
// backed by it, is used up), and releases held; at the end of the input, it releases held
// and the last chunk only if the checksum matches.
func (v *verifyingReader) fill() {
	next := 1 - v.hi
	buf := v.bufs[next]
	k, err := io.ReadFull(v.r, buf)
	v.h.Write(buf[:k])
	v.counter.Add(k) // progress counts what was read and checked
	switch {
	case err == nil:
		v.cur, v.held, v.hi = v.held, buf[:k], next
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		v.finished = true
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.sum.Want {
			v.mismatch = got
			v.err = fmt.Errorf("checksum mismatch: %s %s, expected %s", v.sum.Algo, short(got), short(v.sum.Want))
			return
		}
		v.verified = true
		v.cur, v.tail, v.held = v.held, buf[:k], nil
		if v.onVerified != nil {
			v.onVerified()
		}
	default:
		v.finished, v.err = true, err
	}
}

// Close says the consumer is done reading.
func (v *verifyingReader) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

// outcome waits until the consumer closed the reader (at most wait, or until ctx ends),
// then reports how many bytes it handed on, whether the whole input matched, and the
// checksum read when it did not.
func (v *verifyingReader) outcome(ctx context.Context, wait time.Duration) (n int64, verified bool, mismatch string) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-v.closed:
	case <-t.C:
	case <-ctx.Done():
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n, v.verified, v.mismatch
}

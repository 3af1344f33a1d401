package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"github.com/moby/moby/client"
)

// EnsureResult says what Ensure did.
type EnsureResult struct {
	Key      string
	ImageID  string
	Loaded   bool // false: the engine already had the image
	Bytes    int64
	Duration time.Duration
}

// Ensure makes sure the engine has the image with this key: if the engine already has it,
// nothing happens; else the cached tar is streamed into the engine while its checksum is
// computed, and the load is made to fail unless the checksum matches (the end of the tar is
// held back until it is verified). The loaded image id is then confirmed against the cache
// metadata. ErrNotCached when the cache has no entry; *CorruptError when the tar is damaged.
func Ensure(ctx context.Context, eng Engine, c *Cache, key string, progress ProgressFunc) (EnsureResult, error) {
	start := time.Now()
	res := EnsureResult{Key: key}
	e, lerr := c.Lookup(key)
	if lerr != nil && !errors.Is(lerr, ErrNotCached) {
		return res, lerr
	}
	if e != nil {
		if id, ok, err := hasImage(ctx, eng, e.ImageID); err != nil {
			return res, engineError(EngineHostOf(eng), err)
		} else if ok {
			res.ImageID, res.Duration = id, time.Since(start)
			return res, nil
		}
	} else {
		// Not published (yet): the engine may still have built it itself.
		if id, ok, err := findByKey(ctx, eng, key); err != nil {
			return res, engineError(EngineHostOf(eng), err)
		} else if ok {
			res.ImageID, res.Duration = id, time.Since(start)
			return res, nil
		}
		return res, ErrNotCached
	}
	n, err := load(ctx, eng, c, e, progress)
	if err != nil {
		return res, err
	}
	id, ok, err := hasImage(ctx, eng, e.ImageID)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, fmt.Errorf("loaded %s, but the engine has no image %s as the cache metadata says; the entry may be inconsistent: rebuild with --no-cache", e.Tar, e.ImageID)
	}
	res.ImageID, res.Loaded, res.Bytes, res.Duration = id, true, n, time.Since(start)
	return res, nil
}

// load streams a verified tar into the engine.
func load(ctx context.Context, eng Engine, c *Cache, e *Entry, progress ProgressFunc) (int64, error) {
	f, err := os.Open(e.Tar)
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", e.Tar, err)
	}
	defer f.Close()
	vr := newVerifyingReader(f, e.SHA256, newCounter(progress, "load", e.Size))
	resp, err := eng.ImageLoad(ctx, vr, client.ImageLoadWithQuiet(true))
	if err != nil {
		if vr.mismatch != "" {
			return 0, c.quarantine(e.Key, e.SHA256, vr.mismatch)
		}
		return 0, fmt.Errorf("loading %s into the engine: %w", e.Tar, err)
	}
	rerr := readMessages(resp, nil)
	resp.Close()
	vr.counter.finish()
	if vr.mismatch != "" {
		return vr.n, c.quarantine(e.Key, e.SHA256, vr.mismatch)
	}
	if rerr != nil {
		return vr.n, fmt.Errorf("the engine could not load %s: %w", e.Tar, rerr)
	}
	if !vr.verified {
		return vr.n, fmt.Errorf("the engine stopped reading %s before its end; the load is incomplete", e.Tar)
	}
	return vr.n, nil
}

// tailSize is how much of the end of a tar is held back until the checksum is verified.
// A docker-archive ends with at least 1 KiB of zero blocks, so an engine never sees a
// complete archive from a tar that turns out to be corrupt.
const tailSize = 64 << 10

// verifyingReader hashes what it reads and releases the last tailSize bytes only after the
// whole file matched the expected sha256; on a mismatch it returns an error instead.
type verifyingReader struct {
	r        io.Reader
	h        hash.Hash
	want     string
	buf      []byte // read ahead from r; buf[start:] is not returned yet
	start    int
	eof      bool
	verified bool
	mismatch string // the sha256 found, when it differs
	n        int64
	counter  *counter
}

func newVerifyingReader(r io.Reader, want string, c *counter) *verifyingReader {
	return &verifyingReader{r: r, h: sha256.New(), want: want, counter: c, buf: make([]byte, 0, 4<<20)}
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	for !v.eof && len(v.buf)-v.start < tailSize+len(p) {
		if len(v.buf) == cap(v.buf) {
			if v.start > 0 { // compact: only the few bytes still pending move
				v.buf = v.buf[:copy(v.buf, v.buf[v.start:])]
				v.start = 0
			} else {
				nb := make([]byte, len(v.buf), 2*cap(v.buf))
				copy(nb, v.buf)
				v.buf = nb
			}
		}
		n, err := v.r.Read(v.buf[len(v.buf):cap(v.buf)])
		v.h.Write(v.buf[len(v.buf) : len(v.buf)+n])
		v.buf = v.buf[:len(v.buf)+n]
		if err == io.EOF {
			v.eof = true
			if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
				v.mismatch = got
				return 0, fmt.Errorf("checksum mismatch: sha256 %s, expected %s", short(got), short(v.want))
			}
			v.verified = true
		} else if err != nil {
			return 0, err
		}
	}
	avail := len(v.buf) - v.start
	if !v.eof {
		avail -= tailSize
	}
	if avail <= 0 {
		return 0, io.EOF
	}
	n := copy(p, v.buf[v.start:v.start+avail])
	v.start += n
	v.n += int64(n)
	v.counter.add(n)
	return n, nil
}

// EngineHostOf names an engine for messages.
func EngineHostOf(eng Engine) string {
	if c, ok := eng.(interface{ DaemonHost() string }); ok {
		return c.DaemonHost()
	}
	return EngineHost()
}

package image

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/internal/progress"
)

// EnsureResult says what Ensure did.
type EnsureResult struct {
	Key      string
	ImageID  string
	Loaded   bool // false: the engine already had the image
	Bytes    int64
	Duration time.Duration
	// Entry is the cache's entry the engine's image was checked against, or loaded from
	// (nil: the engine built the image itself, and the cache has none).
	Entry *Entry
}

// Ensure makes sure the engine has the image with this key: if the engine already has it,
// nothing happens; else the cached tar is streamed into the engine while its checksum
// (XXH64, or sha256 for older entries) is computed, and the load is made to fail unless the
// checksum matches (the end of the tar is held back until it is verified). The loaded image id is then confirmed against the cache
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
			res.ImageID, res.Duration, res.Entry = id, time.Since(start), e
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
		return res, lerr // ErrNotCached, or an *IncompleteError (which is one)
	}
	e, n, err := load(ctx, eng, c, key, progress)
	var re *ReplacedError
	if errors.As(err, &re) {
		e, n, err = load(ctx, eng, c, key, progress) // the entry was republished meanwhile: load the new one
	}
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
	res.ImageID, res.Loaded, res.Bytes, res.Duration, res.Entry = id, true, n, time.Since(start), e
	return res, nil
}

// load streams a verified tar into the engine.
func load(ctx context.Context, eng Engine, c *Cache, key string, onProgress ProgressFunc) (*Entry, int64, error) {
	e, f, err := c.open(key)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	sum := e.loadSum()
	cnt := progress.NewCounter(onProgress, "load", e.Size)
	vr := newVerifyingReader(f, sum, cnt)
	vr.onVerified = func() {
		cnt.Finish()
		if onProgress != nil && e.Size >= 256<<20 { // the engine takes seconds more for big images
			onProgress(Progress{Phase: "wait", Step: fmt.Sprintf("%s checksum verified; the engine is unpacking the image", sum.Algo)})
		}
	}
	resp, err := eng.ImageLoad(ctx, vr, client.ImageLoadWithQuiet(true))
	var rerr error
	if err == nil {
		rerr = readMessages(resp, nil)
		resp.Close()
	}
	// The engine may answer before it has read the whole tar; wait until the client is
	// done with it before reading the result.
	n, verified, mismatch := vr.outcome(ctx, 10*time.Second)
	if mismatch != "" {
		return e, n, c.mismatch(e.Key, f, sum, mismatch)
	}
	if err != nil {
		return e, 0, fmt.Errorf("loading %s into the engine: %w", e.Tar, err)
	}
	if rerr != nil {
		return e, n, fmt.Errorf("the engine could not load %s: %w", e.Tar, rerr)
	}
	if !verified {
		return e, n, fmt.Errorf("the engine stopped reading %s before its end; the load is incomplete", e.Tar)
	}
	return e, n, nil
}

// EngineHostOf names an engine for messages.
func EngineHostOf(eng any) string {
	if c, ok := eng.(interface{ DaemonHost() string }); ok {
		return c.DaemonHost()
	}
	return EngineHost()
}

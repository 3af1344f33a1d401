package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/client"
)

// StreamFromCache is the fan-out source of a cache entry: its tar, with its size and the
// XXH64 it must have (a damaged tar aborts the stream rather than ending it). The caller
// closes the returned Closer.
func (c *Cache) StreamFromCache(key string) (FanoutSource, io.Closer, error) {
	e, f, err := c.open(key)
	if err != nil {
		return FanoutSource{}, nil, err
	}
	return FanoutSource{R: f, Size: e.Size, XXH64: e.XXH64}, f, nil
}

// StreamFromEngine is the fan-out source of an image on rank 0's engine: `docker save` of
// it as it comes (size unknown). The caller closes the returned Closer.
func StreamFromEngine(ctx context.Context, eng Engine, ref string) (FanoutSource, io.Closer, error) {
	rc, err := eng.ImageSave(ctx, []string{ref})
	if err != nil {
		return FanoutSource{}, nil, fmt.Errorf("saving %s from the engine for the stream: %w", ref, err)
	}
	return FanoutSource{R: rc, Size: -1}, rc, nil
}

// LoadSink is a fan-out sink that loads the stream into eng: the load fails when the
// stream is cut or damaged (the fan-out's reader fails rather than ending), and then the
// engine is left without the image rather than with a damaged one.
func LoadSink(ctx context.Context, eng Engine) func(io.Reader) error {
	return func(r io.Reader) error {
		resp, err := eng.ImageLoad(ctx, r, client.ImageLoadWithQuiet(true))
		if err != nil {
			return fmt.Errorf("loading the streamed image into the engine: %w", err)
		}
		defer resp.Close()
		if err := readMessages(resp, nil); err != nil {
			return fmt.Errorf("the engine could not load the streamed image: %w", err)
		}
		return nil
	}
}

// TeePublish is a cache entry being written from the same `docker save` that feeds a
// stream (StreamAndPublish).
type TeePublish struct {
	pw   *io.PipeWriter
	rc   io.ReadCloser
	done chan struct{}
	e    *Entry
	err  error
}

// teeSource reads the save for the stream and copies each piece into the cache writer;
// a cache writer that fails (a full disk, a lock held elsewhere) only stops the copying:
// the stream goes on.
type teeSource struct {
	r  io.Reader
	pw *io.PipeWriter
}

func (t *teeSource) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 && t.pw != nil {
		if _, werr := t.pw.Write(p[:n]); werr != nil {
			t.pw = nil // the publisher has ended (and says why)
		}
	}
	if err != nil && t.pw != nil {
		if err == io.EOF {
			t.pw.Close()
		} else {
			t.pw.CloseWithError(err)
		}
		t.pw = nil
	}
	return n, err
}

// errStreamEnded is what the cache writer sees when the stream stops before the end.
var errStreamEnded = errors.New("the stream ended before the whole image was saved")

// StreamAndPublish is the fan-out source of an image on rank 0's engine that the cache
// lacks: one `docker save` of ref feeds the stream and, as it passes, the cache entry key
// (so that build → save → load overlap, and the next job finds the image cached). The
// cache write keeps pace with the stream; if it fails the stream goes on without it. Wait
// says how the publish ended once the stream has; Close (always) ends both.
func StreamAndPublish(ctx context.Context, eng Engine, c *Cache, key, ref string, meta Meta, progress ProgressFunc) (FanoutSource, *TeePublish, error) {
	var expected int64
	if res, err := eng.ImageInspect(ctx, ref); err == nil {
		expected = res.Size
	}
	rc, err := eng.ImageSave(ctx, []string{ref})
	if err != nil {
		return FanoutSource{}, nil, fmt.Errorf("saving %s from the engine for the stream: %w", ref, err)
	}
	pr, pw := io.Pipe()
	t := &TeePublish{pw: pw, rc: rc, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		// Another node (or job) publishing the same key: leave it to that one rather than
		// wait with the stream paused.
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		lock, err := c.Lock(lctx, key, nil)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			t.err = fmt.Errorf("another process holds the cache lock of %s (it is publishing the image); not publishing it from here", ShortKey(key))
		} else if err != nil {
			t.err = fmt.Errorf("taking the cache lock of %s: %w", ShortKey(key), err)
		}
		if err != nil {
			pr.CloseWithError(t.err)
			return
		}
		defer lock.Unlock()
		t.e, t.err = c.Publish(ctx, key, meta, expected, func(w io.Writer, _ *Meta) error {
			_, err := io.Copy(w, pr)
			return err
		}, progress)
		pr.CloseWithError(errStreamEnded) // the tee stops writing if the publish ended early
	}()
	return FanoutSource{R: &teeSource{r: rc, pw: pw}, Size: -1}, t, nil
}

// Wait returns the published entry once the stream has read the whole save, or why
// nothing was published.
func (t *TeePublish) Wait() (*Entry, error) {
	<-t.done
	return t.e, t.err
}

// Close ends the save and, if the stream did not read it to the end, the publish (whose
// temp file is removed); it waits for the publisher.
func (t *TeePublish) Close() error {
	t.pw.CloseWithError(errStreamEnded)
	err := t.rc.Close()
	<-t.done
	return err
}

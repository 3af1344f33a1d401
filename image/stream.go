package image

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/client"
)

// Tar is an image as a docker-archive stream, in no one's terms but its own: distribution
// hands it to the fan-out (image knows nothing of how it travels).
type Tar struct {
	R    io.Reader // the archive; its Read returns when the context ends (an ImageSave body does)
	Size int64     // bytes, or -1 when unknown (a save in progress)
	// XXH64 is the hex checksum the bytes must have, when known (a cache entry's); "" when not.
	XXH64 string
}

// StreamFromCache is a cache entry as a Tar: its tar, with its size and the
// XXH64 it must have (a damaged tar aborts the stream rather than ending it). The caller
// closes the returned Closer.
func (c *Cache) StreamFromCache(key string) (Tar, io.Closer, error) {
	e, f, err := c.open(key)
	if err != nil {
		return Tar{}, nil, err
	}
	return Tar{R: f, Size: e.Size, XXH64: e.XXH64}, f, nil
}

// StreamFromEngine is an image on rank 0's engine: `docker save` of
// it as it comes (size unknown). The caller closes the returned Closer.
func StreamFromEngine(ctx context.Context, eng Engine, ref string) (Tar, io.Closer, error) {
	rc, err := eng.ImageSave(ctx, []string{ref})
	if err != nil {
		return Tar{}, nil, fmt.Errorf("saving %s from the engine for the stream: %w", ref, err)
	}
	return Tar{R: rc, Size: -1}, rc, nil
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
	rc   io.ReadCloser
	src  *teeSource
	done chan struct{} // the publisher has ended
	e    *Entry
	err  error
}

// teeChunks bounds what the tee holds for a cache writer behind the stream (chunks of one
// read each, 256 KiB as the fan-out reads): the stream waits for a slower cache writer
// beyond that, and for one that takes nothing for teeStall it gives the publish up.
const teeChunks = 32

// teeStall is how long the stream waits for a cache writer that takes nothing (a hung
// network filesystem): then the publish is given up and the stream goes on without it.
var teeStall = 10 * time.Second

// teeSource reads the save for the stream and hands a copy of each piece to the feeder,
// which writes it to the publisher. A publisher that fails (a full disk, the key's lock
// held elsewhere), stalls, or is given up only stops the copying: the stream goes on.
// Only the stream's reader calls Read; end is for after the stream has stopped reading.
type teeSource struct {
	ctx   context.Context
	r     io.Reader
	ch    chan []byte   // to the feeder; nil once closed or given up
	fed   chan struct{} // closed when the feeder has stopped
	stop  chan struct{} // closed to stop the feeder
	pw    *io.PipeWriter
	given error // why the copying was given up
}

func (t *teeSource) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 && t.ch != nil {
		timer := time.NewTimer(teeStall)
		select {
		case t.ch <- append([]byte(nil), p[:n]...):
		case <-t.fed: // the publisher ended (and says why)
			t.ch = nil
		case <-timer.C:
			t.giveUp(fmt.Errorf("the cache write took nothing for %s; the stream went on without it", teeStall))
		case <-t.ctx.Done():
			t.giveUp(t.ctx.Err())
		}
		timer.Stop()
	}
	if err != nil && t.ch != nil {
		if err == io.EOF {
			close(t.ch) // the feeder writes what it holds, then ends the publish's input
			t.ch = nil
		} else {
			t.giveUp(err)
		}
	}
	return n, err
}

// giveUp ends the copying: the publisher's input fails with why (no entry is published
// from part of an image), and the feeder stops.
func (t *teeSource) giveUp(why error) {
	if t.ch == nil {
		return
	}
	t.given, t.ch = why, nil
	t.pw.CloseWithError(why) // unblocks a feeder's pending write
	close(t.stop)
}

// feed writes the tee's pieces to the publisher's input, in order, until the tee closes
// its channel (then the input ends cleanly) or gives up.
func feed(ch <-chan []byte, stop <-chan struct{}, pw *io.PipeWriter, fed chan<- struct{}) {
	defer close(fed)
	for {
		select {
		case b, ok := <-ch:
			if !ok {
				pw.Close()
				return
			}
			if _, err := pw.Write(b); err != nil {
				return // the publisher has ended, or the tee gave up
			}
		case <-stop:
			return
		}
	}
}

// errStreamEnded is what the cache writer sees when the stream stops before the end.
var errStreamEnded = errors.New("the stream ended before the whole image was saved")

// StreamAndPublish is a Tar of an image on rank 0's engine that the cache
// lacks: one `docker save` of ref feeds the stream and, as it passes, the cache entry key
// (so that build → save → load overlap, and the next job finds the image cached). The
// cache write keeps pace with the stream (it may lag by a few MiB); one that fails or
// stalls is given up and the stream goes on without it. Wait says how the publish ended
// once the stream has read the whole save; Finish reads the rest of the save into the
// cache after a stream that failed; Close (always) ends both.
//
// ref is saved when it still names meta.ImageID on the engine (engines that load the tar
// then know the image by it), else the image is saved by its id.
func StreamAndPublish(ctx context.Context, eng Engine, c *Cache, key, ref string, meta Meta, progress ProgressFunc) (Tar, *TeePublish, error) {
	var expected int64
	if res, err := eng.ImageInspect(ctx, ref); err == nil {
		expected = res.Size
		if meta.ImageID != "" && res.ID != meta.ImageID { // the tag moved (another build of it)
			ref = meta.ImageID
		}
	} else if meta.ImageID != "" {
		ref = meta.ImageID
	}
	rc, err := eng.ImageSave(ctx, []string{ref})
	if err != nil {
		return Tar{}, nil, fmt.Errorf("saving %s from the engine for the stream: %w", ref, err)
	}
	pr, pw := io.Pipe()
	src := &teeSource{ctx: ctx, r: rc, ch: make(chan []byte, teeChunks), fed: make(chan struct{}), stop: make(chan struct{}), pw: pw}
	t := &TeePublish{rc: rc, src: src, done: make(chan struct{})}
	go feed(src.ch, src.stop, pw, src.fed)
	go func() {
		defer close(t.done)
		defer pr.CloseWithError(errStreamEnded) // the feeder stops if the publish ended early
		// The lock is taken once the first byte is there (the stream may wait long for the
		// next rank), and only briefly: another node or job publishing the same key is left
		// to it rather than have the stream wait.
		br := bufio.NewReaderSize(pr, 256<<10)
		if _, err := br.Peek(1); err != nil {
			t.err = fmt.Errorf("nothing to publish: %w", err)
			return
		}
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		lock, err := c.Lock(lctx, key, nil)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			t.err = fmt.Errorf("another process holds the cache lock of %s (it is publishing the image); not publishing it from here", ShortKey(key))
			return
		} else if err != nil {
			t.err = fmt.Errorf("taking the cache lock of %s: %w", ShortKey(key), err)
			return
		}
		defer lock.Unlock()
		if e, err := c.Lookup(key); err == nil { // published meanwhile: leave it be
			t.e = e
			return
		}
		t.e, t.err = c.Publish(ctx, key, meta, expected, func(w io.Writer, _ *Meta) error {
			_, err := io.Copy(w, br)
			return err
		}, progress)
	}()
	return Tar{R: src, Size: -1}, t, nil
}

// Wait returns the cache entry once the stream has read the whole save (the one published
// now, or one another process published meanwhile), or why nothing was published.
func (t *TeePublish) Wait() (*Entry, error) {
	<-t.done
	if t.err == nil && t.src.given != nil {
		return nil, t.src.given
	}
	return t.e, t.err
}

// Finish reads the rest of the save into the cache after the stream stopped early (a rank
// failed): the image is whole on rank 0, so the next attempt finds it cached. It returns
// as Wait does; ctx ending stops it.
func (t *TeePublish) Finish(ctx context.Context) (*Entry, error) {
	t.src.ctx = ctx
	if _, err := io.Copy(io.Discard, t.src); err != nil {
		t.src.giveUp(err)
	}
	return t.Wait()
}

// Close ends the save and, if the stream did not read it to the end, the publish (whose
// temp file is removed); it waits for the publisher.
func (t *TeePublish) Close() error {
	t.src.giveUp(errStreamEnded)
	t.src.pw.CloseWithError(errStreamEnded) // a feeder still writing the held pieces stops
	err := t.rc.Close()
	<-t.src.fed
	<-t.done
	return err
}

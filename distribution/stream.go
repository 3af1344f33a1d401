package distribution

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/fanout"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
)

// distribution: stream. Rank 0 has every image on its engine (built, found in its cache,
// or pulled); after the "image" release it streams them one after the other along the
// chain of ranks (fanout.Send), and every other rank receives each, loading it while
// passing it on, unless its engine has the image id already (then it only passes it on).
// No shared filesystem is needed for the images. A failure anywhere fails the stream on
// every rank, naming the rank where it began; each rank reports it on the job channel.

// streamConfig is this node's fan-out configuration for the job's image i: each image is a
// session of its own (its job string), so that a late connection of one is never taken
// for another.
func (o *Options) streamConfig(i int) (fanout.Config, error) {
	n := o.Node
	if !CanStream(n.Source) && n.World > 1 {
		return fanout.Config{}, &InputError{"distribution", "stream needs every node's address, which benchctl knows under Slurm (its node list); run under srun, or use distribution: cache"}
	}
	// A rank may wait long for its predecessor (which loads image i-1 before it listens for
	// image i): the job channel, not this timeout, tells a dead rank.
	return fanout.Config{Job: fmt.Sprintf("%s.%d/image/%d", n.JobID, n.Attempt, i), Rank: n.Rank, World: n.World, Hosts: n.Hosts,
		Ports: n.StreamPorts, Secret: o.Secret, Log: o.log(), Progress: o.Progress, ConnectTimeout: o.timeout()}, nil
}

// sendImages is rank 0's side: each image to stream, in the job's order, from its cache
// entry when there is one (with its checksum), else straight from `docker save`, which
// also writes the cache entry as it goes when the cache lacks the image.
func (l *leader) sendImages(ctx context.Context, list []Image, need map[int]bool) error {
	for i, img := range list {
		if img.Via != ViaStream || !need[i] {
			continue
		}
		cfg, err := l.streamConfig(i)
		if err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, l.timeout())
		src, closer, tee, err := l.streamSource(sctx, img)
		if err != nil {
			cancel()
			return err
		}
		start := time.Now()
		res, err := fanout.Send(sctx, cfg, src)
		if tee != nil {
			var e *image.Entry
			var perr error
			if err == nil {
				e, perr = tee.Wait()
			} else if ctx.Err() == nil && sctx.Err() == nil {
				// Another rank failed, not rank 0's save: the image is whole here, so finish
				// its cache entry (the next attempt then finds it cached).
				e, perr = tee.Finish(ctx)
			} else {
				perr = context.Cause(sctx)
			}
			if perr != nil {
				l.log().Warn("the image is not in the cache (the next job streams it again)", "image", img.Ref, "err", perr)
			} else {
				l.log().Info("image written to the cache as it streamed", "image", img.Ref, "key", image.ShortKey(e.Key), "bytes", e.Size)
			}
		}
		closer.Close()
		cancel()
		if err != nil {
			if ctx.Err() != nil { // the job channel's verdict (a rank failed or was lost) names who
				return context.Cause(ctx)
			}
			return fmt.Errorf("streaming image %s to the other nodes: %w", img.Ref, err)
		}
		l.log().Info("image streamed to the other nodes", "image", img.Ref, "bytes", res.Bytes, "seconds", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	}
	return nil
}

// streamSource is where rank 0 reads image img for the stream: the cache entry; or, when
// the cache lacks it and it is to be published (img.publish), one docker save that feeds
// the stream and the cache entry at once (tee: wait for it once the stream has ended);
// else docker save alone.
func (l *leader) streamSource(ctx context.Context, img Image) (fanout.Source, io.Closer, *image.TeePublish, error) {
	tar, closer, tee, err := l.streamTar(ctx, img)
	return fanout.Source{R: tar.R, Size: tar.Size, XXH64: tar.XXH64}, closer, tee, err
}

func (l *leader) streamTar(ctx context.Context, img Image) (image.Tar, io.Closer, *image.TeePublish, error) {
	if img.Key != "" {
		if cache, err := image.OpenCache(l.SharedDir); err == nil {
			src, closer, err := cache.StreamFromCache(img.Key)
			if err == nil {
				return src, closer, nil, nil
			}
			if !errors.Is(err, image.ErrNotCached) {
				l.log().Warn("the cache entry cannot be streamed; streaming from the engine", "key", image.ShortKey(img.Key), "err", err)
			} else if p := img.publish; p != nil {
				l.log().Info("streaming the image and writing it to the cache from the same docker save", "image", img.Ref, "key", image.ShortKey(img.Key))
				src, tee, err := image.StreamAndPublish(ctx, l.eng, cache, img.Key, p.SaveRef, p.Meta, nil)
				if err != nil {
					return image.Tar{}, nil, nil, err
				}
				return src, tee, tee, nil
			}
		}
	}
	src, closer, err := image.StreamFromEngine(ctx, l.eng, img.ID)
	return src, closer, nil, err
}

// receiveImage is a worker's side of the job's image i: received from its predecessor and
// passed on, and loaded here unless this engine has it.
func (w *worker) receiveImage(ctx context.Context, i int, img Image) error {
	cfg, err := w.streamConfig(i)
	if err != nil {
		return err
	}
	recv, err := fanout.Listen(cfg)
	if err != nil {
		return fmt.Errorf("listening for the image stream: %w", err)
	}
	var sink func(io.Reader) error
	have := false
	if _, err := w.eng.ImageInspect(ctx, img.ID); err == nil {
		have = true // only pass it on
	} else {
		sink = image.LoadSink(ctx, w.eng)
	}
	sctx, cancel := context.WithTimeout(ctx, w.timeout())
	start := time.Now()
	res, err := recv.Receive(sctx, sink)
	cancel()
	recv.Close()
	if err != nil {
		if ctx.Err() != nil { // the job channel's verdict (a rank failed or was lost) names who
			return context.Cause(ctx)
		}
		return fmt.Errorf("receiving image %s: %w", img.Ref, err)
	}
	if have {
		w.log().Info("image already present on this node's engine; passed the stream on", "id", img.ID)
		return nil
	}
	got, err := w.eng.ImageInspect(ctx, img.ID)
	if err != nil || got.ID != img.ID {
		return fmt.Errorf("loaded the streamed image, but this engine has no %s as rank 0 runs: %v", img.ID, err)
	}
	w.log().Info("image loaded from the stream", "id", img.ID, "bytes", res.Bytes, "seconds", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return nil
}

// The "have" phase, before any stream: every worker says which of the images to stream its
// engine has already (by id), and rank 0 streams only those that some worker lacks (a job
// run again where the nodes keep their images but share no directory streams nothing).

// streamed lists the indexes of list's images that go by stream.
func streamed(list []Image) []int {
	var out []int
	for i, img := range list {
		if img.Via == ViaStream {
			out = append(out, i)
		}
	}
	return out
}

// streams is rank 0's side of the "have" phase: which images to stream.
func (l *leader) streams(ctx context.Context, list []Image) (map[int]bool, error) {
	idx := streamed(list)
	if len(idx) == 0 {
		return nil, nil
	}
	said, err := l.b.Gather(l.barrierCtx(ctx), "have")
	if err != nil {
		return nil, err
	}
	need := map[int]bool{}
	for _, i := range idx {
		for rank := 1; rank < l.Node.World; rank++ {
			if !slices.Contains(strings.Split(said[fmt.Sprintf("have.%d", rank)], ","), strconv.Itoa(i)) {
				need[i] = true
				break
			}
		}
		if !need[i] {
			l.log().Info("every node has the image already; nothing to stream", "image", list[i].Ref)
			list[i].Via = ViaPresent
		}
	}
	var out []string
	for _, i := range idx {
		if need[i] {
			out = append(out, strconv.Itoa(i))
		}
	}
	if err := l.b.Release(l.barrierCtx(ctx), "have", map[string]string{"stream": strings.Join(out, ",")}); err != nil {
		return nil, err
	}
	if len(out) < len(idx) { // job.json says which went by no stream at all
		l.rep.JobImages(list)
	}
	return need, nil
}

// streams is a worker's side of the "have" phase: it says which images to stream this
// engine has, and learns which rank 0 streams.
func (w *worker) streams(ctx context.Context, list []Image) (map[int]bool, error) {
	idx := streamed(list)
	if len(idx) == 0 {
		return nil, nil
	}
	var have []string
	for _, i := range idx {
		if _, err := w.eng.ImageInspect(ctx, list[i].ID); err == nil {
			have = append(have, strconv.Itoa(i))
		}
	}
	data, err := w.b.WaitWith(w.barrierCtx(ctx), "have", map[string]string{fmt.Sprintf("have.%d", w.Node.Rank): strings.Join(have, ",")})
	if err != nil {
		return nil, err
	}
	need := map[int]bool{}
	for _, s := range strings.Split(data["stream"], ",") {
		if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(list) && list[i].Via == ViaStream {
			need[i] = true
		}
	}
	for _, i := range idx {
		if !need[i] && !slices.Contains(have, strconv.Itoa(i)) {
			err := fmt.Errorf("rank 0 does not stream image %s, which this engine lacks (is every node running the same benchctl?)", list[i].Ref)
			w.rep.Fail(err, exitcode.Failure)
			return nil, err
		}
	}
	return need, nil
}

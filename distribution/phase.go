package distribution

import (
	"context"
	"fmt"
	"strings"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
)

// Lead is rank 0's image phase: it gets each image of the job (from its engine or the
// cache, else built or pulled), chooses how each reaches the other nodes, releases them
// with each image's id, key and route, streams what is to be streamed, and meets every
// node at "ready". b is nil for a job of one node. On an error the job has been told
// (rep.Fail, or b's abort).
func Lead(ctx context.Context, o Options, eng image.Engine, b LeaderBarrier, rep Reporter) (*Images, error) {
	l := &leader{Options: o, eng: eng, b: b, rep: rep}
	uses, err := l.uses()
	if err != nil {
		rep.Fail(err, exitcode.Invalid)
		return nil, err
	}
	list := make([]Image, len(uses))
	for i, use := range uses {
		if len(uses) > 1 {
			l.log().Info(fmt.Sprintf("image %d of %d", i+1, len(uses)), "image", use.Image.String(), "benchmarks", strings.Join(use.Benchmarks, ","))
		}
		img, err := l.getImage(ctx, use, len(uses))
		if err != nil {
			err = ofImage(err, uses, i)
			// A bad build record is bad input on every rank, a failed build a failed build.
			rep.Fail(err, exitcode.Of(err))
			return nil, err
		}
		list[i] = img
	}
	if b != nil {
		if err := l.chooseVia(ctx, list); err != nil {
			return nil, err
		}
	}
	rep.JobImages(list)
	if b != nil {
		data, err := releaseData(list)
		if err == nil {
			err = b.Release(l.barrierCtx(ctx), "image", data)
		}
		if err != nil {
			b.Abort(err.Error(), exitcode.Failure)
			return nil, err
		}
		need, err := l.streams(ctx, list)
		if err != nil { // the job channel's verdict, or a barrier timeout
			if _, aborted := b.Aborted(); !aborted {
				b.Abort(err.Error(), exitcode.Failure)
			}
			return nil, err
		}
		if err := l.sendImages(ctx, list, need); err != nil {
			rep.Fail(err, exitcode.Failure)
			return nil, err
		}
	}
	rep.NodeImages(list)
	if err := l.phase(ctx, "ready", nil); err != nil {
		return nil, err
	}
	return newImages(uses, list), nil
}

// Follow is a worker's image phase: it waits for rank 0's release, ensures each image on
// this node's engine (from the cache, the stream, or its registry), and meets every node
// at "ready". On an error the job has been told (rep.Fail), or knows already (a verdict of
// the job channel).
func Follow(ctx context.Context, o Options, eng image.Engine, b WorkerBarrier, rep Reporter) (*Images, error) {
	w := &worker{Options: o, eng: eng, b: b, rep: rep}
	uses, err := w.uses()
	if err != nil {
		rep.Fail(err, exitcode.Invalid)
		return nil, err
	}
	if _, err := b.Wait(w.barrierCtx(ctx), "joined"); err != nil { // see chooseVia
		return nil, err
	}
	data, err := b.Wait(w.barrierCtx(ctx), "image")
	if err != nil {
		return nil, err
	}
	list, err := releasedImages(data, len(uses))
	if err != nil {
		rep.Fail(err, exitcode.Failure)
		return nil, err
	}
	need, err := w.streams(ctx, list)
	if err != nil { // streams reports its own failure; a verdict is the job's
		return nil, err
	}
	for i, img := range list {
		var err error
		switch {
		case img.Via == ViaStream && need[i]:
			err = w.receiveImage(ctx, i, img)
		case img.Via == ViaStream:
			w.log().Info("image already present on this node's engine", "id", img.ID)
		default:
			err = w.ensure(ctx, img, uses[i].Image)
		}
		if err != nil {
			err = ofImage(err, uses, i)
			rep.Fail(err, exitcode.Failure)
			return nil, err
		}
	}
	rep.NodeImages(list)
	if _, err := b.Wait(w.barrierCtx(ctx), "ready"); err != nil {
		return nil, err
	}
	return newImages(uses, list), nil
}

// leader is rank 0 in its image phase.
type leader struct {
	Options
	eng image.Engine
	b   LeaderBarrier // nil for a job of one node
	rep Reporter
}

// worker is any other rank in its image phase.
type worker struct {
	Options
	eng image.Engine
	b   WorkerBarrier
	rep Reporter
}

// uses is the job's images, at most MaxImages.
func (o *Options) uses() ([]manifest.ImageUse, error) {
	uses := o.Manifest.Images(o.Benchmarks)
	if len(uses) > MaxImages {
		return nil, &InputError{"benchmarks", fmt.Sprintf("the selected benchmarks run on %d images; one job runs at most %d (select fewer models, or share Dockerfiles)", len(uses), MaxImages)}
	}
	return uses, nil
}

// ofImage names the image err is of, in a job of several images.
func ofImage(err error, uses []manifest.ImageUse, i int) error {
	if len(uses) > 1 {
		return fmt.Errorf("image %s (benchmarks %s): %w", uses[i].Image, strings.Join(uses[i].Benchmarks, ", "), err)
	}
	return err
}

// phase is one barrier phase of rank 0 (none in a job of one node): every worker released
// once all arrived; a release that fails aborts the job.
func (l *leader) phase(ctx context.Context, name string, data map[string]string) error {
	if l.b == nil {
		return nil
	}
	if err := l.b.Release(l.barrierCtx(ctx), name, data); err != nil {
		if _, aborted := l.b.Aborted(); !aborted {
			l.b.Abort(err.Error(), exitcode.Failure)
		}
		return err
	}
	return nil
}

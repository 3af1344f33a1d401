package distribution

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchctl/benchctl/image/digestmemo"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// getImage is rank 0's policy for one image of the job (leaderImage), with the build
// record that pins it, if run was given one.
func (l *leader) getImage(ctx context.Context, use manifest.ImageUse, images int) (Image, error) {
	m := l.Manifest.WithImage(use.Image)
	multi := l.Node.World > 1
	o := leaderOptions{Engine: l.eng, Manifest: m, Progress: l.Progress, Version: l.Version, Digests: l.Digests,
		Note: func(msg string, args ...any) { l.log().Info(msg, args...) }, Distribute: multi && !l.Manifest.PullsEverywhere(),
		PublishLater: multi && l.mayStream(),
		Credentials: func(ctx context.Context, ref string) (*image.Credentials, error) {
			return l.credentials(ctx, use.Image)
		}}
	if use.Image.Builds() && len(l.Records) > 0 {
		rec, err := image.RecordFor(l.Records, use.Image, images, use.Benchmarks)
		if err != nil {
			return Image{}, &InputError{"--record", err.Error()}
		}
		o.Record = rec
	}
	if use.Image.Builds() || o.Distribute {
		cache, err := image.OpenCache(l.SharedDir)
		if err != nil {
			return Image{}, err
		}
		o.Cache = cache
	}
	res, err := leaderImage(ctx, o)
	if err != nil {
		return Image{}, err
	}
	if res.Key != "" && !res.Published {
		l.logEnsure(res.Ensure)
	}
	if res.Pulled {
		l.log().Info("image pulled", "ref", res.Ref, "digest", res.Digest)
	}
	return Image{Ref: res.Ref, ID: res.ID, Key: res.Key, Use: use, BuildSeconds: res.BuildSeconds, Digest: res.Digest, publish: res.Publish}, nil
}

// leaderOptions say how rank 0 gets a job's image.
type leaderOptions struct {
	Engine   image.Engine
	Cache    *image.Cache
	Manifest *manifest.Manifest
	// Record pins the image (benchctl build --record): it must be in the cache, it is
	// never rebuilt from a manifest that may have changed since.
	Record   *image.Record
	Digests  *digestmemo.Memo // the context's files' digests kept between runs (nil: none)
	Progress image.ProgressFunc
	Version  string // benchctl's, for the cache metadata
	// Note, if set, is told what the policy decided ("image not cached: building"), for
	// the log.
	Note func(msg string, args ...any)
	// Distribute publishes an image.ref image to the cache (once per image id), so that the
	// other nodes load it from there instead of each pulling it: set for a job of several
	// nodes. Without it an image.ref is only made present on this engine.
	Distribute bool
	// PublishLater (rank 0 may stream the image) leaves what the cache lacks for the
	// stream to publish: a built image is built into the engine only, and neither it nor a
	// pulled image.ref is written to the cache here; leaderResult.Publish says what the
	// stream is to write (from the same docker save that feeds it: sendImages).
	PublishLater bool
	// Credentials, if set, gives the registry credentials for a pull (nil: none); it is
	// called only when a pull is needed.
	Credentials func(ctx context.Context, ref string) (*image.Credentials, error)
}

// leaderResult is the image rank 0 runs: Ref to show and tag with, ID, and Key (empty
// for an image.ref used as it is).
type leaderResult struct {
	Ref, ID, Key string
	Ensure       image.EnsureResult // how this engine got it
	Built        bool               // built here, now
	Pulled       bool               // pulled from its registry here, now
	// Digest is the registry digest of an image.ref (repo@sha256:...), when the engine
	// knows it (an image pulled from a registry).
	Digest    string
	Published bool // published from this engine to the cache, now
	// Publish (with PublishLater) says that the cache lacks the image under Key, and how
	// the stream is to publish it.
	Publish *publishLater
	// BuildSeconds is how long the image's build took: this build's, or the build record's
	// (0 when neither says).
	BuildSeconds float64
}

// publishLater is an image the cache lacks that rank 0 writes to the cache as it streams
// it: saving SaveRef (the tag it was built with, so that engines loading the tar know it by
// that tag, else the id), with Meta.
type publishLater struct {
	SaveRef string
	Meta    image.Meta
}

// leaderImage is rank 0's image policy, in one call: an image.ref is inspected on this
// engine as it is; a built image is ensured by its key (already on the engine, or loaded
// from the cache), else built and published, and an image this engine has but the cache
// lacks is published so that the other nodes can load it. With a Record, the recorded key
// is used (a warning notes when the manifest's inputs have changed since) and a missing
// cache entry is an error, not a rebuild.
func leaderImage(ctx context.Context, o leaderOptions) (leaderResult, error) {
	note := o.Note
	if note == nil {
		note = func(string, ...any) {}
	}
	m := o.Manifest
	if !m.Image.Builds() {
		return leaderRef(ctx, o, note)
	}
	var key, tag string
	var err error
	if rec := o.Record; rec != nil {
		key, tag = rec.Key, rec.Tag
		if cur, err := image.KeyUsing(image.InputFromManifest(m), o.Digests); err == nil && cur != key {
			note("the manifest's image inputs changed since the build record; running the recorded image", "record", image.ShortKey(key), "manifest", image.ShortKey(cur))
		}
	} else if key, err = image.KeyUsing(image.InputFromManifest(m), o.Digests); err != nil {
		return leaderResult{}, err
	}
	out := leaderResult{Key: key}
	if o.Record != nil {
		out.BuildSeconds = o.Record.Durations.Build
	}
	if err := checkRecorded(o.Cache, o.Record); err != nil {
		return leaderResult{}, err
	}
	res, err := image.Ensure(ctx, o.Engine, o.Cache, key, o.Progress)
	if err == nil && o.Record != nil && o.Record.ImageID != "" && res.ImageID != o.Record.ImageID {
		err = recordMismatch(o.Record, res.ImageID, "the engine")
	}
	var ce *image.CorruptError
	if errors.As(err, &ce) {
		note(ce.Error())
	}
	if errors.Is(err, image.ErrNotCached) || ce != nil {
		if o.Record != nil {
			return leaderResult{}, fmt.Errorf("the recorded image %s is not in the cache %s any more; run benchctl build again", image.ShortKey(key), o.Cache.Dir)
		}
		note("image not cached: building from the manifest", "key", image.ShortKey(key))
		rec, berr := image.Build(ctx, image.BuildOptions{Manifest: m, Cache: o.Cache, Builder: &image.DockerBuilder{Engine: o.Engine},
			EngineOnly: o.PublishLater, Progress: o.Progress, Version: o.Version})
		if berr != nil {
			return leaderResult{}, berr
		}
		tag, out.Built, out.BuildSeconds = rec.Tag, true, rec.Durations.Build
		res, err = image.Ensure(ctx, o.Engine, o.Cache, key, o.Progress)
	}
	if err != nil {
		return leaderResult{}, err
	}
	out.Ensure, out.ID = res, res.ImageID
	e, lerr := res.Entry, error(nil)
	if e == nil { // the engine had built it: the cache may have it since, or not
		e, lerr = o.Cache.Lookup(key)
	}
	switch {
	case lerr == nil:
		if tag == "" && len(e.Tags) > 0 {
			tag = e.Tags[0]
		}
	case errors.Is(lerr, image.ErrNotCached):
		// This engine has the image (it built it earlier) but the cache does not: publish
		// it, or the other nodes could not load it.
		if tag == "" {
			tag = m.Image.Tag
		}
		if tag == "" {
			tag = image.DefaultTag(m.Name, key)
		}
		meta := image.Meta{ImageID: res.ImageID, Tags: []string{tag}, Builder: "docker", Manifest: m.Name, Benchctl: o.Version}
		if o.PublishLater {
			out.Ref, out.Publish = res.ImageID, &publishLater{SaveRef: res.ImageID, Meta: meta}
			if out.Built {
				out.Ref, out.Publish.SaveRef = tag, tag // just built with it
			}
			return out, nil
		}
		note("publishing the engine's image to the cache", "key", image.ShortKey(key))
		if _, err := image.PublishFromEngine(ctx, o.Engine, o.Cache, key, res.ImageID, meta, o.Progress); err != nil {
			return leaderResult{}, err
		}
		out.Ref, out.Published = res.ImageID, true
		return out, nil
	}
	out.Ref = res.ImageID
	if tag != "" {
		out.Ref = tag
	}
	return out, nil
}

// checkRecorded refuses a cache entry of the recorded key that holds another image than
// the build record says (a co-writer of the shared cache may have replaced the entry, its
// checksums with it), before any of it is loaded. A missing entry is left to Ensure.
func checkRecorded(c *image.Cache, rec *image.Record) error {
	if rec == nil || rec.ImageID == "" || c == nil {
		return nil
	}
	e, err := c.Lookup(rec.Key)
	if err != nil || e.ImageID == rec.ImageID {
		return nil
	}
	return recordMismatch(rec, e.ImageID, "the cache entry "+e.Tar)
}

func recordMismatch(rec *image.Record, got, where string) error {
	return fmt.Errorf("%s holds image %s, but the build record says %s for key %s: the entry was replaced since the build (someone with write access to the cache, or a rebuild without the record); run benchctl build again, and keep the cache writable only by people you trust", where, got, rec.ImageID, image.ShortKey(rec.Key))
}

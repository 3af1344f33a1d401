package image

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchctl/benchctl/manifest"
)

// LeaderOptions say how rank 0 gets a job's image.
type LeaderOptions struct {
	Engine   Engine
	Cache    *Cache
	Manifest *manifest.Manifest
	// Record pins the image (benchctl build --record): it must be in the cache, it is
	// never rebuilt from a manifest that may have changed since.
	Record   *Record
	Progress ProgressFunc
	Version  string // benchctl's, for the cache metadata
	// Note, if set, is told what the policy decided ("image not cached: building"), for
	// the caller's log: this package never prints.
	Note func(msg string, args ...any)
	// Distribute publishes an image.ref image to the cache (once per image id), so that the
	// other nodes load it from there instead of each pulling it: set for a job of several
	// nodes. Without it an image.ref is only made present on this engine.
	Distribute bool
	// DeferPublish leaves to the caller what the cache lacks: a built image is built into
	// the engine only, and neither it nor a pulled image.ref is written to the cache here;
	// LeaderResult.Unpublished says so, and the caller publishes it later (rank 0 streaming
	// the image writes the cache entry from the same docker save: StreamAndPublish).
	DeferPublish bool
	// Credentials, if set, gives the registry credentials for a pull (nil: none); it is
	// called only when a pull is needed.
	Credentials func(ctx context.Context, ref string) (*Credentials, error)
}

// LeaderResult is the image rank 0 runs: Ref to show and tag with, ID, and Key (empty
// for an image.ref used as it is).
type LeaderResult struct {
	Ref, ID, Key string
	Ensure       EnsureResult // how this engine got it
	Built        bool         // built here, now
	Pulled       bool         // pulled from its registry here, now
	// Digest is the registry digest of an image.ref (repo@sha256:...), when the engine
	// knows it (an image pulled from a registry).
	Digest    string
	Published bool // published from this engine to the cache, now
	// Unpublished (with DeferPublish) says that the cache lacks the image under Key: the
	// caller is to publish it, with Meta, saving SaveRef (the tag it was built with, so that
	// engines loading the tar know it by that tag, else the id).
	Unpublished bool
	Meta        Meta
	SaveRef     string
	// BuildSeconds is how long the image's build took: this build's, or the build record's
	// (0 when neither says).
	BuildSeconds float64
}

// Leader is rank 0's image policy, in one call: an image.ref is inspected on this engine
// as it is; a built image is ensured by its key (already on the engine, or loaded from the
// cache), else built and published, and an image this engine has but the cache lacks is
// published so that the other nodes can load it. With a Record, the recorded key is used
// (a warning notes when the manifest's inputs have changed since) and a missing cache
// entry is an error, not a rebuild.
func Leader(ctx context.Context, o LeaderOptions) (LeaderResult, error) {
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
		if cur, err := Key(InputFromManifest(m)); err == nil && cur != key {
			note("the manifest's image inputs changed since the build record; running the recorded image", "record", ShortKey(key), "manifest", ShortKey(cur))
		}
	} else if key, err = Key(InputFromManifest(m)); err != nil {
		return LeaderResult{}, err
	}
	out := LeaderResult{Key: key}
	if o.Record != nil {
		out.BuildSeconds = o.Record.Durations.Build
	}
	if err := checkRecorded(o.Cache, o.Record); err != nil {
		return LeaderResult{}, err
	}
	res, err := Ensure(ctx, o.Engine, o.Cache, key, o.Progress)
	if err == nil && o.Record != nil && o.Record.ImageID != "" && res.ImageID != o.Record.ImageID {
		err = recordMismatch(o.Record, res.ImageID, "the engine")
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		note(ce.Error())
	}
	if errors.Is(err, ErrNotCached) || ce != nil {
		if o.Record != nil {
			return LeaderResult{}, fmt.Errorf("the recorded image %s is not in the cache %s any more; run benchctl build again", ShortKey(key), o.Cache.Dir)
		}
		note("image not cached: building from the manifest", "key", ShortKey(key))
		rec, berr := Build(ctx, BuildOptions{Manifest: m, Cache: o.Cache, Builder: &DockerBuilder{Engine: o.Engine},
			EngineOnly: o.DeferPublish, Progress: o.Progress, Version: o.Version})
		if berr != nil {
			return LeaderResult{}, berr
		}
		tag, out.Built, out.BuildSeconds = rec.Tag, true, rec.Durations.Build
		res, err = Ensure(ctx, o.Engine, o.Cache, key, o.Progress)
	}
	if err != nil {
		return LeaderResult{}, err
	}
	out.Ensure, out.ID = res, res.ImageID
	e, lerr := o.Cache.Lookup(key)
	switch {
	case lerr == nil:
		if tag == "" && len(e.Tags) > 0 {
			tag = e.Tags[0]
		}
	case errors.Is(lerr, ErrNotCached):
		// This engine has the image (it built it earlier) but the cache does not: publish
		// it, or the other nodes could not load it.
		if tag == "" {
			tag = m.Image.Tag
		}
		if tag == "" {
			tag = DefaultTag(m.Name, key)
		}
		if o.DeferPublish {
			out.Ref, out.Unpublished, out.SaveRef = res.ImageID, true, res.ImageID
			if out.Built {
				out.Ref, out.SaveRef = tag, tag // just built with it
			}
			out.Meta = Meta{ImageID: res.ImageID, Tags: []string{tag}, Builder: "docker", Manifest: m.Name, Benchctl: o.Version}
			return out, nil
		}
		note("publishing the engine's image to the cache", "key", ShortKey(key))
		if _, err := PublishFromEngine(ctx, o.Engine, o.Cache, key, res.ImageID, Meta{ImageID: res.ImageID, Tags: []string{tag},
			Builder: "docker", Manifest: m.Name, Benchctl: o.Version}, o.Progress); err != nil {
			return LeaderResult{}, err
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
func checkRecorded(c *Cache, rec *Record) error {
	if rec == nil || rec.ImageID == "" || c == nil {
		return nil
	}
	e, err := c.Lookup(rec.Key)
	if err != nil || e.ImageID == rec.ImageID {
		return nil
	}
	return recordMismatch(rec, e.ImageID, "the cache entry "+e.Tar)
}

func recordMismatch(rec *Record, got, where string) error {
	return fmt.Errorf("%s holds image %s, but the build record says %s for key %s: the entry was replaced since the build (someone with write access to the cache, or a rebuild without the record); run benchctl build again, and keep the cache writable only by people you trust", where, got, rec.ImageID, ShortKey(rec.Key))
}

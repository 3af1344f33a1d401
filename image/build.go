package image

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

// BuildOptions configure Build.
type BuildOptions struct {
	Manifest *manifest.Manifest
	Cache    *Cache
	Builder  Builder
	NoCache  bool // build and publish again even when the key is published
	// EngineOnly builds into the engine and publishes nothing (BuildRequest.EngineOnly).
	EngineOnly bool
	Progress   ProgressFunc
	Version    string // benchctl version, for records
}

// Build gets the manifest's image into the cache: a key already published is a cache hit
// (no build, no save). Otherwise it takes the key's lock — a second builder of the same key
// waits and then finds the first one's entry — builds and publishes.
func Build(ctx context.Context, o BuildOptions) (*Record, error) {
	m := o.Manifest
	if !m.Image.Builds() {
		return nil, fmt.Errorf("manifest %s uses the existing image %s (image.ref): there is nothing to build", m.Name, m.Image.Ref)
	}
	start := time.Now()
	in := InputFromManifest(m)
	key, err := Key(in)
	if err != nil {
		return nil, err
	}
	rec := &Record{Version: 1, Manifest: m.Name, ManifestPath: m.Path, ManifestDigest: m.Digest, Key: key,
		Tag: m.Image.Tag, Builder: o.Builder.Name(), Benchctl: o.Version, Dockerfile: m.Image.Dockerfile}
	if rec.Tag == "" {
		rec.Tag = DefaultTag(m.Name, key)
	}
	for _, a := range in.BuildArgs {
		rec.BuildArgs = append(rec.BuildArgs, KeyValue{a.Name, a.Value})
	}
	rec.Durations.Key = time.Since(start).Seconds()
	finish := func(e *Entry, hit bool) (*Record, error) {
		rec.ImageID, rec.Size, rec.Tar, rec.SHA256, rec.CacheHit = e.ImageID, e.Size, e.Tar, e.SHA256, hit
		if hit && len(e.Tags) > 0 && !slices.Contains(e.Tags, rec.Tag) {
			// The tag is not part of the key: a cache hit brings the tag the image was built
			// with, which is what engines that load the tar will know it by.
			rec.Notes = append(rec.Notes, fmt.Sprintf("image.tag %s is not the tag of the cached image (%s): the tag is not part of the key, so the cached image keeps its tag; rebuild with --no-cache to retag", rec.Tag, e.Tags[0]))
			rec.Tag = e.Tags[0]
		}
		rec.Created = time.Now().UTC()
		rec.Durations.Total = time.Since(start).Seconds()
		return rec, nil
	}
	if !o.NoCache {
		if e, err := o.Cache.Lookup(key); err == nil {
			return finish(e, true)
		} else if !errors.Is(err, ErrNotCached) {
			return nil, err
		}
	}
	// A COPY source the context lacks fails the build at that step: say so before starting.
	if err := CheckCopySources(in); err != nil {
		return nil, err
	}
	waitStart := time.Now()
	lock, err := o.Cache.Lock(ctx, key, func() {
		if o.Progress != nil {
			o.Progress(Progress{Phase: "wait", Step: "another builder is building key " + ShortKey(key) + "; waiting for it"})
		}
	})
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	rec.Durations.Waiting = time.Since(waitStart).Seconds()
	if rec.Durations.Waiting < 0.5 {
		rec.Durations.Waiting = 0
	}
	if !o.NoCache || rec.Durations.Waiting > 0 {
		// Whoever held the lock may have published it meanwhile.
		if e, err := o.Cache.Lookup(key); err == nil {
			return finish(e, true)
		}
	}
	buildStart := time.Now()
	e, err := o.Builder.Build(ctx, BuildRequest{Input: in, Key: key, Tag: rec.Tag, Manifest: m.Name, NoCache: o.NoCache,
		EngineOnly: o.EngineOnly, Cache: o.Cache, Progress: o.Progress, Version: o.Version})
	var be *BuildError
	if errors.As(err, &be) && be.Dockerfile == "" {
		be.Dockerfile = in.Dockerfile // a parse error, say, names only a line
	}
	if err != nil {
		return nil, err
	}
	rec.Durations.Build = time.Since(buildStart).Seconds()
	return finish(e, false)
}

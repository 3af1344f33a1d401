package distribution

import (
	"context"
	"errors"
	"fmt"

	"github.com/distribution/reference"

	"github.com/benchctl/benchctl/image"
)

// leaderRef is rank 0's policy for an image used by reference: pulled from its registry
// as image.pull says (missing: only when this engine lacks it; always: the tag's digest is
// resolved again; never). For a job of several nodes, an image rank 0 had to pull is
// published to the cache under image.RefKey(id) (unless it is there already), so that every
// other node loads it from the cache: one registry pull per job, not one per node. An
// image rank 0 already had is keyed only when the cache has it; otherwise each other node
// uses its own copy, or pulls it itself.
func leaderRef(ctx context.Context, o leaderOptions, note func(string, ...any)) (leaderResult, error) {
	ref := o.Manifest.Image.Ref
	policy := o.Manifest.Image.Pull
	if policy == "" {
		policy = image.PullMissing
	}
	out := leaderResult{Ref: ref}
	res, have, err := image.Inspected(ctx, o.Engine, ref)
	if err != nil {
		return out, err
	}
	id := res.ID
	if !have && policy == image.PullNever {
		return out, fmt.Errorf("image %s is not on this node's engine and image.pull is never: load or pull it on every node, or set image.pull: missing", ref)
	}
	if !have || policy == image.PullAlways {
		note("pulling the image", "ref", ref, "why", map[bool]string{false: "not on this engine", true: "image.pull: always"}[have])
		var creds *image.Credentials
		if o.Credentials != nil {
			if creds, err = o.Credentials(ctx, ref); err != nil {
				return out, err
			}
		}
		if err := image.Pull(ctx, o.Engine, ref, creds, o.Progress); err != nil {
			return out, err
		}
		out.Pulled = true
		// What the engine has now (the answer before the pull is of no image, or of the
		// one the tag named then).
		if res, err = o.Engine.ImageInspect(ctx, ref); err != nil {
			return out, fmt.Errorf("image %s is not on this node's engine after the pull: %w", ref, err)
		}
	}
	out.ID, out.Digest = res.ID, repoDigest(ref, res.RepoDigests)
	if have && out.Pulled && id != out.ID {
		note("the tag moved to another image since this engine last had it", "ref", ref, "was", id, "now", out.ID)
	}
	if !o.Distribute || o.Cache == nil {
		return out, nil
	}
	key := image.RefKey(out.ID)
	if _, err := o.Cache.Lookup(key); err == nil {
		out.Key = key
		return out, nil
	} else if !errors.Is(err, image.ErrNotCached) {
		var ce *image.CorruptError
		if !errors.As(err, &ce) {
			return out, err
		}
		note(ce.Error())
	}
	if !out.Pulled {
		// This engine had it already (pre-loaded, as sites often do for big images): the
		// others likely have it too; one that does not pulls it itself. Saving it to the
		// cache would cost a whole image's write for nobody.
		return out, nil
	}
	out.Key = key
	// Saved by id: the tag may move to another image meanwhile (another job's pull).
	meta := image.Meta{ImageID: out.ID, Tags: []string{ref}, Builder: "pull", Manifest: o.Manifest.Name, Benchctl: o.Version}
	if o.PublishLater {
		out.Publish = &publishLater{SaveRef: out.ID, Meta: meta}
		return out, nil
	}
	lock, err := o.Cache.Lock(ctx, out.Key, func() { note("another node is publishing this image; waiting for it", "ref", ref) })
	if err != nil {
		return out, err
	}
	defer lock.Unlock()
	if _, err := o.Cache.Lookup(out.Key); err == nil {
		return out, nil
	}
	note("publishing the image to the cache for the other nodes", "ref", ref, "key", image.ShortKey(out.Key))
	if _, err := image.PublishFromEngine(ctx, o.Engine, o.Cache, out.Key, out.ID, meta, o.Progress); err != nil {
		return out, err
	}
	out.Published = true
	return out, nil
}

// repoDigest is the engine's repo@sha256 digest of ref's repository, or "".
func repoDigest(ref string, digests []string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ""
	}
	for _, d := range digests {
		if dn, err := reference.ParseNormalizedNamed(d); err == nil && dn.Name() == named.Name() {
			return d
		}
	}
	return ""
}

package distribution

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// ensure makes a released image present on this worker's engine when it does not come by
// stream: loaded from the cache by its key, else (an image.ref) as refHere says.
func (w *worker) ensure(ctx context.Context, img Image, spec manifest.Image) error {
	if img.Key == "" {
		return w.refHere(ctx, img, spec)
	}
	cache, err := image.OpenCache(w.SharedDir)
	if err != nil {
		return err
	}
	res, err := image.Ensure(ctx, w.eng, cache, img.Key, w.Progress)
	if errors.Is(err, image.ErrNotCached) {
		return fmt.Errorf("image %s is not in the cache %s on this node (is the shared directory the same on every node?)", image.ShortKey(img.Key), cache.Dir)
	}
	if err != nil {
		return err
	}
	if res.ImageID != img.ID {
		return fmt.Errorf("loaded image %s, but rank 0 runs %s", res.ImageID, img.ID)
	}
	w.logEnsure(res)
	return nil
}

// refHere is a worker's image.ref that does not come from the cache (distribution:
// registry, or an image rank 0 already had): this engine's own copy when it has the image
// id, else pulled from its registry by rank 0's digest (the same content, even if the tag
// has moved since), unless image.pull is never.
func (w *worker) refHere(ctx context.Context, img Image, spec manifest.Image) error {
	if _, err := w.eng.ImageInspect(ctx, img.ID); err == nil {
		w.log().Info("image already present on this node's engine", "id", img.ID)
		return nil
	}
	if spec.Pull == image.PullNever {
		id, err := inspectRef(ctx, w.eng, img.Ref)
		if err != nil {
			return err
		}
		return fmt.Errorf("image %s is %s on this node but %s on rank 0, and image.pull is never: load the same image on every node", img.Ref, id, img.ID)
	}
	ref := img.Ref
	if img.Digest != "" {
		ref = img.Digest
	}
	creds, err := w.credentials(ctx, spec)
	if err != nil {
		return err
	}
	why := "this node's engine lacks it"
	if w.Manifest.PullsEverywhere() {
		why = "distribution: registry"
	}
	w.log().Info("pulling the image", "ref", ref, "why", why)
	if err := image.Pull(ctx, w.eng, ref, creds, w.Progress); err != nil {
		return err
	}
	res, err := w.eng.ImageInspect(ctx, ref)
	if err != nil {
		return fmt.Errorf("image %s is not on this node's engine after the pull: %w", ref, err)
	}
	if res.ID != img.ID {
		return fmt.Errorf("pulled %s as %s, but rank 0 runs %s (did the tag move? pin it by digest)", ref, res.ID, img.ID)
	}
	return nil
}

// credentials are the registry credentials for pulling img (nil: none).
func (o *Options) credentials(ctx context.Context, img manifest.Image) (*image.Credentials, error) {
	if o.Credentials == nil {
		return nil, nil
	}
	return o.Credentials(ctx, img)
}

func (o *Options) logEnsure(res image.EnsureResult) {
	if res.Loaded {
		o.log().Info("image loaded from the cache", "key", image.ShortKey(res.Key), "bytes", res.Bytes, "seconds", fmt.Sprintf("%.1f", res.Duration.Seconds()))
	} else {
		o.log().Info("image already present on this node's engine", "id", res.ImageID)
	}
}

func inspectRef(ctx context.Context, eng image.Engine, ref string) (string, error) {
	res, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("image %s is not on this node's engine (%s): load or pull it on every node, or build it with image.dockerfile: %w", ref, image.EngineHostOf(eng), err)
	}
	return res.ID, nil
}

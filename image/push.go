package image

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/moby/moby/client"
)

// Pusher is what Push needs of an engine: tag and push. *client.Client satisfies it.
type Pusher interface {
	ImageTag(ctx context.Context, opts client.ImageTagOptions) (client.ImageTagResult, error)
	ImagePush(ctx context.Context, ref string, opts client.ImagePushOptions) (client.ImagePushResponse, error)
}

var _ Pusher = (*client.Client)(nil)

// Push tags the engine's image local as remote and pushes it to remote's registry with
// creds (nil: none; engines before API 1.46 refuse a push without an auth header, so an
// empty one is sent), reporting the bytes sent (Phase "push"). It returns the pushed
// manifest's digest (remote-name@sha256:...), when the engine says it.
func Push(ctx context.Context, eng Pusher, local, remote string, creds *Credentials, progress ProgressFunc) (string, error) {
	host, err := RegistryOf(remote)
	if err != nil {
		return "", fmt.Errorf("--push %s is not an image reference: %w", remote, err)
	}
	auth, err := creds.encode(serverAddress(host))
	if err != nil {
		return "", err
	}
	if auth == "" {
		auth = "e30=" // {}: an empty auth config
	}
	if _, err := eng.ImageTag(ctx, client.ImageTagOptions{Source: local, Target: remote}); err != nil {
		return "", fmt.Errorf("tagging %s as %s: %w", local, remote, err)
	}
	resp, err := eng.ImagePush(ctx, remote, client.ImagePushOptions{RegistryAuth: auth})
	digest := ""
	if err == nil {
		pp := newPullProgress(progress)
		pp.phase = "push"
		err = readMessages(resp, func(m jsonMessage) {
			pp.add(m)
			// "<tag>: digest: sha256:... size: N"
			if _, after, ok := strings.Cut(m.Status, "digest: "); ok {
				if d, _, _ := strings.Cut(after, " "); strings.HasPrefix(d, "sha256:") {
					digest = d
				}
			}
		})
		resp.Close()
		pp.finish()
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if isAuthRefusal(err) {
			return "", &AuthError{Ref: remote, Registry: host, Source: creds.source(), Err: err, Push: true}
		}
		return "", fmt.Errorf("pushing %s to %s: %w", remote, host, plainHTTPHint(host, err))
	}
	if digest == "" {
		return "", nil
	}
	name := remote
	if i := strings.LastIndex(remote, ":"); i > strings.LastIndex(remote, "/") {
		name = remote[:i]
	}
	return name + "@" + digest, nil
}

// PushTargets is where each record's image goes for `build --push REF`: REF itself for one
// image; for several, REF is a repository (no tag) and each image gets its short key as
// its tag.
func PushTargets(recs []*Record, ref string) ([]string, error) {
	if _, err := RegistryOf(ref); err != nil {
		return nil, fmt.Errorf("--push %s is not an image reference: %w", ref, err)
	}
	if len(recs) == 1 {
		return []string{ref}, nil
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") || strings.Contains(ref, "@") {
		return nil, fmt.Errorf("--push %s names one image, and the manifest builds %d: give a repository without a tag (each image is tagged with its key)", ref, len(recs))
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = ref + ":" + ShortKey(r.Key)
	}
	return out, nil
}

// PushRecords pushes the images of recs to the registry (PushTargets), with the docker
// CLI's credentials for it: an image the builder left only in the cache (buildkit) is
// loaded into the engine first. Each record's Pushed is set to the digest reference.
func PushRecords(ctx context.Context, eng interface {
	Engine
	Pusher
}, c *Cache, recs []*Record, ref string, lookup func(string) (string, bool), progress ProgressFunc) error {
	targets, err := PushTargets(recs, ref)
	if err != nil {
		return err
	}
	host, _ := RegistryOf(ref)
	creds, err := LookupCredentials(ctx, host, lookup)
	if err != nil {
		return err
	}
	for i, r := range recs {
		if _, err := Ensure(ctx, eng, c, r.Key, progress); err != nil {
			return fmt.Errorf("pushing %s: getting the image onto the engine: %w", targets[i], err)
		}
		d, err := Push(ctx, eng, r.ImageID, targets[i], creds, progress)
		if err != nil {
			return err
		}
		r.Pushed = targets[i]
		if d != "" {
			r.Pushed = d
		}
	}
	return nil
}

// LoadAndPush loads a docker-archive (whose image is tagged local) into the engine of kind
// and pushes it to ref's registry with the credentials lookup finds (the docker CLI's, or
// the variables Credentials reads), returning what Push returns.
func LoadAndPush(ctx context.Context, kind string, archive io.Reader, local, ref string, lookup func(string) (string, bool), progress ProgressFunc) (string, error) {
	host, err := RegistryOf(ref)
	if err != nil {
		return "", fmt.Errorf("%s is not an image reference: %w", ref, err)
	}
	eng, err := ConnectChecked(ctx, kind)
	if err != nil {
		return "", err
	}
	defer eng.Close()
	resp, err := eng.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return "", fmt.Errorf("loading %s into the engine: %w", local, err)
	}
	_, err = io.Copy(io.Discard, resp)
	resp.Close()
	if err != nil {
		return "", fmt.Errorf("loading %s into the engine: %w", local, err)
	}
	creds, err := LookupCredentials(ctx, host, lookup)
	if err != nil {
		return "", err
	}
	return Push(ctx, eng, local, ref, creds, progress)
}

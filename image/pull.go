package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/internal/progress"
)

// Pull policies (manifest image.pull).
const (
	PullMissing = "missing" // pull when the engine lacks the ref (the default)
	PullAlways  = "always"  // pull every time: the tag's digest is resolved again
	PullNever   = "never"   // never pull: the engine must have it
)

// AuthError is a pull the registry refused for its credentials: which registry, and how to
// log in (exit code 1: not the user's input, the registry's answer).
type AuthError struct {
	Ref, Registry, Source string
	Err                   error
	Push                  bool // a push (else a pull)
}

func (e *AuthError) Error() string {
	how := fmt.Sprintf("log in with `docker login %s` (benchctl reads the docker CLI's config.json and its credential helpers), or name a secret holding user:password in image.pullSecret", e.Registry)
	if e.Source != "" {
		how = fmt.Sprintf("the credentials from %s were refused: log in again with `docker login %s`, or fix image.pullSecret", e.Source, e.Registry)
	}
	verb := "pulling"
	if e.Push {
		verb = "pushing"
		how = strings.Replace(how, "image.pullSecret", "the docker config", 1)
	}
	return fmt.Sprintf("%s %s: the registry %s refused access (%v): %s", verb, e.Ref, e.Registry, e.Err, how)
}

func (e *AuthError) Unwrap() error { return e.Err }

// isAuthRefusal says whether a pull error is the registry refusing credentials.
func isAuthRefusal(err error) bool {
	if cerrdefs.IsUnauthorized(err) || cerrdefs.IsPermissionDenied(err) {
		return true
	}
	m := strings.ToLower(err.Error())
	for _, s := range []string{"unauthorized", "authentication required", "no basic auth credentials", "access denied", "denied: requested access"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// Pull pulls ref into the engine with creds (nil: none), reporting the bytes downloaded
// (Phase "pull") as the engine streams its progress.
func Pull(ctx context.Context, eng Engine, ref string, creds *Credentials, progress ProgressFunc) error {
	host, err := RegistryOf(ref)
	if err != nil {
		return fmt.Errorf("image %s is not a reference: %w", ref, err)
	}
	auth, err := creds.encode(serverAddress(host))
	if err != nil {
		return err
	}
	resp, err := eng.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: auth})
	if err == nil {
		pp := newPullProgress(progress)
		err = readMessages(resp, pp.add)
		resp.Close()
		pp.finish()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if isAuthRefusal(err) {
		return &AuthError{Ref: ref, Registry: host, Source: creds.source(), Err: err}
	}
	return fmt.Errorf("pulling %s from %s: %w", ref, host, plainHTTPHint(host, err))
}

// pullProgress sums the engine's per-layer download progress into one count of bytes.
type pullProgress struct {
	phase  string // "pull" or "push"
	fn     ProgressFunc
	layers map[string][2]int64 // id -> current, total
	last   time.Time
}

func newPullProgress(fn ProgressFunc) *pullProgress {
	return &pullProgress{phase: "pull", fn: fn, layers: map[string][2]int64{}}
}

func (p *pullProgress) add(m jsonMessage) {
	if p.fn == nil || m.ID == "" {
		return
	}
	l := p.layers[m.ID]
	switch {
	case (m.Status == "Downloading" || m.Status == "Pushing") && m.ProgressDetail != nil:
		l = [2]int64{m.ProgressDetail.Current, max(m.ProgressDetail.Total, l[1])}
	case m.Status == "Download complete" || m.Status == "Pull complete" || m.Status == "Already exists" || m.Status == "Pushed" || m.Status == "Layer already exists":
		l[0] = l[1]
	default:
		return
	}
	p.layers[m.ID] = l
	if time.Since(p.last) >= progress.Every {
		p.last = time.Now()
		p.report(false)
	}
}

func (p *pullProgress) report(final bool) {
	var done, total int64
	for _, l := range p.layers {
		done, total = done+l[0], total+l[1]
	}
	p.fn(Progress{Phase: p.phase, Done: done, Total: total, Final: final})
}

func (p *pullProgress) finish() {
	if p.fn != nil && len(p.layers) > 0 {
		p.report(true)
	}
}

// RefKey is the cache key of an image used by reference (image.ref), once rank 0 has it:
// a digest of its image id, so that the cache holds each such image once, whatever tag
// named it.
func RefKey(imageID string) string {
	sum := sha256.Sum256([]byte("benchctl image.ref\x00" + imageID))
	return hex.EncodeToString(sum[:])
}

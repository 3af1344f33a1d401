package distribution

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"

	"github.com/moby/moby/api/types/registry"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// fakeRegistryEngine is an engine that lacks ref until it is pulled; a pull is refused
// unless the X-Registry-Auth header carries user (when user is set).
type fakeRegistryEngine struct {
	mu           sync.Mutex
	ref, user    string
	pulled       bool
	pulls, saves int
	auths        []registry.AuthConfig
	id, digest   string
}

func (f *fakeRegistryEngine) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/images/create"):
		f.pulls++
		var a registry.AuthConfig
		if h := r.Header.Get("X-Registry-Auth"); h != "" {
			data, _ := base64.URLEncoding.DecodeString(h)
			json.Unmarshal(data, &a)
		}
		f.auths = append(f.auths, a)
		if f.user != "" && a.Username != f.user {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Head \"https://reg.example:5000/v2/app/manifests/1\": no basic auth credentials"}`))
			return
		}
		f.pulled = true
		for _, m := range []string{
			`{"status":"Pulling from app","id":"1"}`,
			`{"status":"Downloading","progressDetail":{"current":100,"total":400},"id":"l1"}`,
			`{"status":"Downloading","progressDetail":{"current":50,"total":600},"id":"l2"}`,
			`{"status":"Download complete","id":"l1"}`, `{"status":"Pull complete","id":"l2"}`,
			`{"status":"Digest: ` + f.digest + `"}`} {
			w.Write([]byte(m + "\n"))
		}
	case strings.HasSuffix(r.URL.Path, "/images/get"):
		f.saves++
		w.Header().Set("Content-Type", "application/x-tar")
		w.Write([]byte("a docker-archive of " + f.ref))
	case strings.HasSuffix(r.URL.Path, "/json") && f.pulled:
		w.Write([]byte(`{"Id":"` + f.id + `","Size":20,"RepoDigests":["reg.example:5000/app@` + f.digest + `","other/app@sha256:` + strings.Repeat("9", 64) + `"]}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"No such image"}`))
	}
}

// An image.ref the engine lacks is pulled once, with the credentials given and with its
// progress summed over layers; for a job of several nodes it is published to the cache
// under image.RefKey(id), once: a second job finds it there and neither pulls nor saves.
func TestLeaderPullsAndPublishesARef(t *testing.T) {
	f := &fakeRegistryEngine{ref: "reg.example:5000/app:1", user: "bench", id: "sha256:" + strings.Repeat("c", 64), digest: "sha256:" + strings.Repeat("d", 64)}
	eng := testutil.StubEngine(t, f.handle)
	c := newCache(t)
	var last image.Progress
	o := leaderOptions{Engine: eng, Cache: c, Distribute: true, Manifest: &manifest.Manifest{Name: "m", Image: manifest.Image{Ref: f.ref}},
		Progress: func(p image.Progress) {
			if p.Phase == "pull" {
				last = p
			}
		},
		Credentials: func(ctx context.Context, ref string) (*image.Credentials, error) {
			return &image.Credentials{Username: "bench", Password: "s3cret-pass", Source: "test"}, nil
		}}
	res, err := leaderImage(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pulled || !res.Published || res.ID != f.id || res.Key != image.RefKey(f.id) || res.Digest != "reg.example:5000/app@"+f.digest {
		t.Errorf("result %+v", res)
	}
	if f.pulls != 1 || f.saves != 1 || len(f.auths) != 1 || f.auths[0].Username != "bench" || f.auths[0].Password != "s3cret-pass" || f.auths[0].ServerAddress != "reg.example:5000" {
		t.Errorf("%d pulls, %d saves, auth %+v", f.pulls, f.saves, f.auths)
	}
	if !last.Final || last.Done != 1000 || last.Total != 1000 {
		t.Errorf("pull progress %+v", last)
	}
	if e, err := c.Lookup(res.Key); err != nil || e.ImageID != f.id {
		t.Errorf("cache entry %+v %v", e, err)
	}
	// Already on the engine and in the cache: nothing pulled or saved.
	res, err = leaderImage(context.Background(), o)
	if err != nil || res.Pulled || res.Published || f.pulls != 1 || f.saves != 1 {
		t.Errorf("second job: %+v %v (%d pulls, %d saves)", res, err, f.pulls, f.saves)
	}
	// pull: always pulls again (the tag may have moved), but the cache still has the id.
	o.Manifest.Image.Pull = image.PullAlways
	if res, err = leaderImage(context.Background(), o); err != nil || !res.Pulled || res.Published || f.pulls != 2 || f.saves != 1 {
		t.Errorf("pull always: %+v %v (%d pulls, %d saves)", res, err, f.pulls, f.saves)
	}
	// One node: nothing is published.
	o.Distribute, o.Manifest.Image.Pull = false, ""
	if res, err = leaderImage(context.Background(), o); err != nil || res.Key != "" || f.saves != 1 {
		t.Errorf("one node: %+v %v", res, err)
	}
	// An image rank 0 already had (pre-loaded) and the cache lacks: nothing is saved for
	// nodes that most likely have it too (each that does not pulls it itself).
	o.Distribute, o.Cache = true, newCache(t)
	if res, err = leaderImage(context.Background(), o); err != nil || res.Key != "" || res.Pulled || f.saves != 1 || f.pulls != 2 {
		t.Errorf("pre-loaded: %+v %v (%d pulls, %d saves)", res, err, f.pulls, f.saves)
	}
}

// A registry that refuses the credentials: an *image.AuthError naming the registry and how to log
// in, which never carries the password.
func TestPullRefusedForCredentials(t *testing.T) {
	f := &fakeRegistryEngine{ref: "reg.example:5000/app:1", user: "bench", id: "sha256:" + strings.Repeat("c", 64), digest: "sha256:" + strings.Repeat("d", 64)}
	eng := testutil.StubEngine(t, f.handle)
	for _, creds := range []*image.Credentials{nil, {Username: "wrong", Password: "not-the-pass-123", Source: "/home/u/.docker/config.json"}} {
		_, err := leaderImage(context.Background(), leaderOptions{Engine: eng, Manifest: &manifest.Manifest{Name: "m", Image: manifest.Image{Ref: f.ref}},
			Credentials: func(context.Context, string) (*image.Credentials, error) { return creds, nil }})
		var ae *image.AuthError
		if !errors.As(err, &ae) || ae.Registry != "reg.example:5000" || !strings.Contains(err.Error(), "docker login reg.example:5000") {
			t.Fatalf("err = %v", err)
		}
		if creds != nil && (!strings.Contains(err.Error(), "the credentials from /home/u/.docker/config.json were refused") || strings.Contains(err.Error(), "not-the-pass-123")) {
			t.Errorf("err = %v", err)
		}
	}
}

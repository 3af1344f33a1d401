package distribution

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// Rank 0's image policy is one call; its branches that need no build are checked here
// (the build branch runs on the testbed's engines in tests/).
func TestLeader(t *testing.T) {
	have := map[string]bool{}
	eng := testutil.StubEngine(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/images/json") { // list by label: none
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`[]`))
			return
		}
		name := r.URL.Path[strings.LastIndex(r.URL.Path[:len(r.URL.Path)-len("/json")], "/")+1 : len(r.URL.Path)-len("/json")]
		if strings.HasSuffix(r.URL.Path, "/json") && have[name] {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"Id":"sha256:` + strings.Repeat("a", 64) + `","Size":1}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"No such image: ` + name + `"}`))
	})
	ctx := context.Background()

	have["busybox:1"] = true
	res, err := leaderImage(ctx, leaderOptions{Engine: eng, Manifest: &manifest.Manifest{Name: "m", Image: manifest.Image{Ref: "busybox:1"}}})
	if err != nil || res.Ref != "busybox:1" || res.ID != "sha256:"+strings.Repeat("a", 64) || res.Key != "" {
		t.Fatalf("an image.ref on the engine: %+v, %v", res, err)
	}
	_, err = leaderImage(ctx, leaderOptions{Engine: eng, Manifest: &manifest.Manifest{Name: "m", Image: manifest.Image{Ref: "nope:1", Pull: image.PullNever}}})
	if err == nil || !strings.Contains(err.Error(), "image nope:1 is not on this node's engine and image.pull is never") {
		t.Fatalf("an image.ref missing: %v", err)
	}

	dir := t.TempDir()
	df := filepath.Join(dir, "Dockerfile")
	os.WriteFile(df, []byte("FROM scratch\n"), 0o644)
	m := &manifest.Manifest{Name: "m", Image: manifest.Image{Dockerfile: df, Context: dir}}
	var notes []string
	_, err = leaderImage(ctx, leaderOptions{Engine: eng, Cache: newCache(t), Manifest: m, Record: &image.Record{Key: strings.Repeat("b", 64)},
		Note: func(msg string, _ ...any) { notes = append(notes, msg) }})
	if err == nil || !strings.Contains(err.Error(), "the recorded image bbbbbbbbbbbb is not in the cache") {
		t.Fatalf("a recorded image missing from the cache: %v", err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "inputs changed since the build record") {
		t.Fatalf("notes %q", notes)
	}
}

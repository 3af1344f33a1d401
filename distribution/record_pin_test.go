package distribution

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// A co-writer of the shared cache replaces the entry of a recorded key with an image of
// their own (tar, checksum and metadata consistent with each other). A job pinned to the
// build record must refuse it before any byte reaches the engine.
func TestRecordPinsTheImageID(t *testing.T) {
	var loads atomic.Int32
	eng := testutil.StubEngine(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/images/load") {
			loads.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/images/json") {
			w.Write([]byte(`[]`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"No such image"}`))
	})
	c := newCache(t)
	key := strings.Repeat("c", 64)
	publishBytes(t, c, key, []byte("the co-writer's image")) // metadata image id sha256:x
	dir := t.TempDir()
	df := filepath.Join(dir, "Dockerfile")
	os.WriteFile(df, []byte("FROM scratch\n"), 0o644)
	m := &manifest.Manifest{Name: "m", Image: manifest.Image{Dockerfile: df, Context: dir}}
	rec := &image.Record{Key: key, ImageID: "sha256:" + strings.Repeat("d", 64)}
	_, err := leaderImage(context.Background(), leaderOptions{Engine: eng, Cache: c, Manifest: m, Record: rec, Note: func(string, ...any) {}})
	if err == nil || !strings.Contains(err.Error(), "sha256:x") || !strings.Contains(err.Error(), rec.ImageID) {
		t.Fatalf("a replaced entry of the recorded key: %v", err)
	}
	if n := loads.Load(); n != 0 {
		t.Errorf("%d loads into the engine", n)
	}
}

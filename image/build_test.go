package image

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// fakeBuilder publishes a small tar, tagged as asked.
type fakeBuilder struct{ builds int }

func (f *fakeBuilder) Name() string { return "fake" }

func (f *fakeBuilder) Build(ctx context.Context, req BuildRequest) (*Entry, error) {
	f.builds++
	return req.Cache.Publish(ctx, req.Key, Meta{ImageID: "sha256:fake", Tags: []string{req.Tag}}, func(w io.Writer, m *Meta) error {
		_, err := io.WriteString(w, "tar of "+req.Tag)
		return err
	}, nil)
}

// The tag is not part of the key: a cache hit under another tag says so and reports the
// tag the cached image really has.
func TestCacheHitUnderAnotherTag(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "ctx"), 0o755) // the manifest stays out of the build context
	os.WriteFile(filepath.Join(dir, "ctx", "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	p := filepath.Join(dir, "m.yaml")
	load := func(tag string) *manifest.Manifest {
		os.WriteFile(p, []byte("name: t\nimage: {dockerfile: ctx/Dockerfile, tag: "+tag+"}\nbenchmarks: [{name: a, command: [x]}]\n"), 0o644)
		m, _, err := manifest.Load(p, manifest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBuilder{}
	rec, err := Build(context.Background(), BuildOptions{Manifest: load("first/img:1"), Cache: c, Builder: b})
	if err != nil || rec.CacheHit || rec.Tag != "first/img:1" {
		t.Fatalf("%+v %v", rec, err)
	}
	rec, err = Build(context.Background(), BuildOptions{Manifest: load("second/img:3"), Cache: c, Builder: b})
	if err != nil || !rec.CacheHit || b.builds != 1 {
		t.Fatalf("%+v %v", rec, err)
	}
	if rec.Tag != "first/img:1" || len(rec.Notes) != 1 || !strings.Contains(rec.Notes[0], "image.tag second/img:3 is not the tag of the cached image (first/img:1)") {
		t.Fatalf("tag %s, notes %q", rec.Tag, rec.Notes)
	}
}

func TestTailDropsTerminalEscapes(t *testing.T) {
	tl := &tail{n: 2}
	tl.add("\x1b[91mFATAL: no\x1b[0m")
	tl.add("plain")
	tl.add("\x1b[1;32mok\x1b[0m \x1b[2K")
	if strings.Join(tl.lines, "|") != "plain|ok " {
		t.Fatalf("%q", tl.lines)
	}
}

package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/manifest"
)

// A manifest whose benchmarks run on three images (the manifest's, a benchmark's own
// Dockerfile, a benchmark's own ref): the dry run shows which benchmark runs on which, and
// each container line names its own image; a build record pins each image by Dockerfile.
func TestPlanShowsEachBenchmarksImage(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.Dockerfile", "b.Dockerfile"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("FROM scratch\nLABEL f="+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	body := "name: t\nimage: {dockerfile: a.Dockerfile}\ngpu: {vendor: none}\nbenchmarks:\n" +
		"- {name: one, command: [x]}\n- {name: two, command: [x], image: {dockerfile: b.Dockerfile}}\n" +
		"- {name: three, command: [x], image: {ref: 'busybox:1'}}\n- {name: four, command: [x]}\n"
	m, _, err := manifest.Parse("m.yaml", filepath.Join(dir, "m.yaml"), []byte(body), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Node: nodeOf(t, testutil.LookupOf(nil)), Manifest: m, SharedDir: dir, Lookup: testutil.LookupOf(nil)}
	p, err := Plan(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Images) != 3 {
		t.Fatalf("images %+v", p.Images)
	}
	runs := map[string]string{}
	for _, img := range p.Images {
		runs[strings.Join(img.Benchmarks, ",")] = img.Ref
		if img.Key == "" && img.Ref != "busybox:1" {
			t.Errorf("built image without a key: %+v", img)
		}
	}
	a, b := runs["one,four"], runs["two"]
	if a == "" || b == "" || a == b || runs["three"] != "busybox:1" {
		t.Fatalf("which benchmark runs on which image: %v", runs)
	}
	for i, want := range []string{a, b, "busybox:1", a} {
		if !strings.HasSuffix(p.Containers[i], " "+want) && !strings.Contains(p.Containers[i], " "+want+" ") {
			t.Errorf("container %d does not run %s: %s", i, want, p.Containers[i])
		}
	}

	// Pinned by a build record of both built images, matched by Dockerfile.
	recA := &image.Record{Version: 1, Key: strings.Repeat("a", 64), ImageID: "sha256:a", Tag: "pinned/a:1", Dockerfile: m.Image.Dockerfile}
	recB := &image.Record{Version: 1, Key: strings.Repeat("b", 64), ImageID: "sha256:b", Tag: "pinned/b:1", Dockerfile: m.Benchmarks[1].Image.Dockerfile}
	o.Records = []*image.Record{recB, recA}
	if p, err = Plan(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if p.Images[0].Ref != "pinned/a:1" || p.Images[0].Key != recA.Key || p.Images[1].Ref != "pinned/b:1" {
		t.Errorf("pinned images %+v", p.Images)
	}
	// A record that lacks one of the images is bad input naming it.
	o.Records = []*image.Record{recA}
	_, err = Plan(context.Background(), o)
	var ce *ContextError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "none is built from "+m.Benchmarks[1].Image.Dockerfile+" with these build args (benchmarks two)") {
		t.Errorf("err = %v", err)
	}
}

// Build records of several images are written as one version-2 file and read back; a
// version-1 file still reads as one record.
func TestRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	recs := []*image.Record{
		{Version: 1, Key: strings.Repeat("a", 64), ImageID: "sha256:a", Dockerfile: "/x/a", Benchmarks: []string{"one"}},
		{Version: 1, Key: strings.Repeat("b", 64), ImageID: "sha256:b", Dockerfile: "/x/b", Benchmarks: []string{"two"}},
	}
	for _, n := range []int{1, 2} {
		p := filepath.Join(dir, "r.json")
		if err := image.WriteRecords(p, recs[:n]); err != nil {
			t.Fatal(err)
		}
		got, err := image.ReadRecords(p)
		if err != nil || len(got) != n || got[n-1].Dockerfile != recs[n-1].Dockerfile {
			t.Errorf("%d records: read %+v, %v", n, got, err)
		}
	}
	for body, want := range map[string]string{
		`{"version":2,"images":[]}`:              "lists no images",
		`{"version":2,"images":[{"version":1}]}`: "images[0] is not a benchctl build record",
		`{"version":2,"images":[{"version":1`:    "unexpected end of JSON input",
		`{"version":3,"key":"x"}`:                "is not a benchctl build record",
	} {
		p := filepath.Join(dir, "bad.json")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := image.ReadRecords(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		}
	}
}

package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// brokenOne fails the build of one Dockerfile and builds the others like fakeBuilder.
type brokenOne struct {
	fakeBuilder
	broken string
}

func (b *brokenOne) Build(ctx context.Context, req BuildRequest) (*Entry, error) {
	if filepath.Base(req.Input.Dockerfile) == b.broken {
		return nil, &BuildError{Builder: "fake", Err: errors.New("unknown instruction: FOOBAR")}
	}
	return b.fakeBuilder.Build(ctx, req)
}

// Every image of a manifest is built once, in the order the benchmarks use them, image.ref
// benchmarks are left alone, and one broken Dockerfile neither stops the others nor hides
// which benchmarks it takes down: the error names it and is a build failure (exit 2).
func TestBuildAllBuildsEachImageOnce(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.Dockerfile", "b.Dockerfile", "c.Dockerfile"} {
		os.WriteFile(filepath.Join(dir, f), []byte("FROM scratch\nLABEL f="+f+"\n"), 0o644)
	}
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("name: t\nimage: {dockerfile: a.Dockerfile}\nbenchmarks:\n- {name: one, command: [x]}\n"+
		"- {name: two, command: [x], image: {dockerfile: b.Dockerfile}}\n- {name: three, command: [x], image: {ref: 'busybox:1'}}\n"+
		"- {name: four, command: [x], image: {dockerfile: c.Dockerfile}}\n- {name: five, command: [x]}\n"), 0o644)
	m, _, err := manifest.Load(p, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newCache(t)
	b := &brokenOne{broken: "b.Dockerfile"}
	var started []string
	built, err := BuildAll(context.Background(), BuildAllOptions{BuildOptions: BuildOptions{Manifest: m, Cache: c, Builder: b},
		Starting: func(i, n int, use manifest.ImageUse) { started = append(started, strings.Join(use.Benchmarks, "+")) }})
	var be *BuildError
	var ae *BuildAllError
	if !errors.As(err, &ae) || !errors.As(err, &be) || be.ExitCode() != 2 || ae.Of != 3 ||
		!strings.Contains(err.Error(), "1 of 3 images failed to build: "+filepath.Join(dir, "b.Dockerfile")+" (benchmarks two)") {
		t.Fatalf("err = %v", err)
	}
	if strings.Join(started, " ") != "one+five two four" || b.builds != 2 || len(built) != 4 {
		t.Fatalf("started %q, %d builds, %d images", started, b.builds, len(built))
	}
	if built[0].Record == nil || strings.Join(built[0].Record.Benchmarks, ",") != "one,five" || built[1].Err == nil ||
		built[2].Record != nil || built[2].Err != nil || built[3].Record == nil || built[3].Record.Dockerfile != filepath.Join(dir, "c.Dockerfile") {
		t.Errorf("built %+v", built)
	}
	// Again, with the broken one fixed: the two published images are cache hits.
	b.broken = ""
	if built, err = BuildAll(context.Background(), BuildAllOptions{BuildOptions: BuildOptions{Manifest: m, Cache: c, Builder: b}}); err != nil {
		t.Fatal(err)
	}
	if b.builds != 3 || !built[0].Record.CacheHit || built[1].Record.CacheHit || !built[3].Record.CacheHit {
		t.Errorf("%d builds; cache hits %v %v %v", b.builds, built[0].Record.CacheHit, built[1].Record.CacheHit, built[3].Record.CacheHit)
	}
}

// A manifest of image.ref benchmarks only has nothing to build.
func TestBuildAllNothingToBuild(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("name: t\nimage: {ref: 'x:1'}\nbenchmarks: [{name: a, command: [x]}, {name: b, command: [x], image: {ref: 'y:2'}}]\n"), 0o644)
	m, _, err := manifest.Load(p, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = BuildAll(context.Background(), BuildAllOptions{BuildOptions: BuildOptions{Manifest: m, Cache: newCache(t), Builder: &fakeBuilder{}}})
	if err == nil || !strings.Contains(err.Error(), "uses only existing images (image.ref: x:1, y:2): there is nothing to build") {
		t.Errorf("err = %v", err)
	}
}

// A record is matched to an image by its content's key first (a record made where the
// Dockerfile had another path), else by its Dockerfile and, when one Dockerfile is built
// with several sets of build args, by the args.
func TestRecordForMatchesTheKeyFirst(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nLABEL a=1\n"), 0o644)
	img := manifest.Image{Dockerfile: filepath.Join(dir, "Dockerfile"), Context: dir}
	key, err := Key(InputFromManifest(&manifest.Manifest{Image: img}))
	if err != nil {
		t.Fatal(err)
	}
	recs := []*Record{{Key: strings.Repeat("1", 64), Dockerfile: "/ci/build/other/Dockerfile"}, {Key: key, Dockerfile: "/ci/build/x/Dockerfile"}}
	if r, err := RecordFor(recs, img, 2, []string{"a"}); err != nil || r.Key != key {
		t.Errorf("%+v %v", r, err)
	}
}

// A record is matched to an image by its Dockerfile and, when one Dockerfile is built with
// several sets of build args, by the args.
func TestRecordForMatchesArgs(t *testing.T) {
	a := manifest.Image{Dockerfile: "/x/Dockerfile", BuildArgs: []manifest.EnvVar{{Name: "V", Value: "1"}}}
	b := manifest.Image{Dockerfile: "/x/Dockerfile", BuildArgs: []manifest.EnvVar{{Name: "V", Value: "2"}}}
	recs := []*Record{
		{Key: "k1", Dockerfile: "/x/Dockerfile", BuildArgs: []KeyValue{{"V", "1"}}},
		{Key: "k2", Dockerfile: "/x/Dockerfile", BuildArgs: []KeyValue{{"V", "2"}}},
	}
	for img, want := range map[*manifest.Image]string{&a: "k1", &b: "k2"} {
		if r, err := RecordFor(recs, *img, 2, []string{"x"}); err != nil || r.Key != want {
			t.Errorf("%v: %+v %v, want %s", img.BuildArgs, r, err, want)
		}
	}
	c := manifest.Image{Dockerfile: "/x/Dockerfile", BuildArgs: []manifest.EnvVar{{Name: "V", Value: "3"}}}
	if _, err := RecordFor(recs, c, 2, []string{"y"}); err == nil || !strings.Contains(err.Error(), "none is built from /x/Dockerfile with these build args (benchmarks y)") {
		t.Errorf("no match: %v", err)
	}
	if _, err := RecordFor(append(recs, recs[0]), a, 2, nil); err == nil || !strings.Contains(err.Error(), "2 images built from /x/Dockerfile with the same build args") {
		t.Errorf("ambiguous: %v", err)
	}
}

package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	return req.Cache.Publish(ctx, req.Key, Meta{ImageID: "sha256:fake", Tags: []string{req.Tag}}, 0, func(w io.Writer, m *Meta) error {
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
	c := newCache(t)
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
	tl.add("\x1b[91mFATAL: no\x1b[0m", false)
	tl.add("plain", false)
	tl.add("\x1b[1;32mok\x1b[0m \x1b[2K", false)
	if strings.Join(tl.lines, "|") != "plain|ok " {
		t.Fatalf("%q", tl.lines)
	}
}

// A command's stderr may reach us before stdout it printed earlier; its error line must not
// be pushed out of the tail by that stdout.
func TestTailKeepsStderrOverLateStdout(t *testing.T) {
	tl := &tail{n: 5}
	tl.add("ERROR: it broke", true)
	for i := range 10 {
		tl.add(fmt.Sprint("out ", i), false)
	}
	if got := strings.Join(tl.lines, "|"); got != "ERROR: it broke|out 6|out 7|out 8|out 9" {
		t.Fatalf("%q", got)
	}
	// Stderr alone keeps at most about half; the newest lines always stay.
	tl.reset()
	for i := range 10 {
		tl.add(fmt.Sprint("err ", i), true)
		tl.add(fmt.Sprint("out ", i), false)
	}
	if len(tl.lines) != 5 || tl.lines[4] != "out 9" || tl.nerr > 3 {
		t.Fatalf("%q (%d from stderr)", tl.lines, tl.nerr)
	}
}

// The classic builder's stream: stderr comes coloured, the builder's own lines are not
// part of the tail, and a colour reset alone is not a line.
func TestFollowClassicStream(t *testing.T) {
	var stream strings.Builder
	msg := func(s string) {
		b, _ := json.Marshal(map[string]string{"stream": s})
		stream.Write(append(b, '\n'))
	}
	msg("Step 3/3 : RUN [\"/prog\"]\n")
	msg(" ---> Running in 0123456789ab\n")
	msg("\x1b[91mERROR: something broke\n\x1b[0m")
	for i := range 40 {
		msg(fmt.Sprintf("line %d\n", i))
	}
	msg("Removing intermediate container 0123456789ab\n")
	stream.WriteString(`{"errorDetail":{"message":"The command '/prog' returned a non-zero code: 3"},"error":"x"}` + "\n")
	_, err := (&DockerBuilder{}).follow(strings.NewReader(stream.String()), nil)
	var be *BuildError
	if !errors.As(err, &be) || be.Step != `Step 3/3 : RUN ["/prog"]` || be.Tail[0] != "ERROR: something broke" ||
		be.Tail[len(be.Tail)-1] != "line 39" || len(be.Tail) != 30 || !strings.Contains(err.Error(), "non-zero code: 3") {
		t.Fatalf("%v\n%q", err, be.Tail)
	}
	for _, l := range be.Tail {
		if l == "" || strings.Contains(l, "Running in") || strings.Contains(l, "Removing") {
			t.Fatalf("builder chatter or an empty line in the tail: %q", be.Tail)
		}
	}
}

type failingBuilder struct{}

func (failingBuilder) Name() string { return "failing" }
func (failingBuilder) Build(context.Context, BuildRequest) (*Entry, error) {
	return nil, &BuildError{Builder: "failing", Err: errors.New("dockerfile parse error line 2: unknown instruction: FOOBAR")}
}

// A failed build names the Dockerfile: the builder's own message may give only a line.
func TestBuildErrorNamesTheDockerfile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "train.Dockerfile"), []byte("FROM scratch\nFOOBAR\n"), 0o644)
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("name: t\nimage: {dockerfile: train.Dockerfile}\nbenchmarks: [{name: a, command: [x]}]\n"), 0o644)
	m, _, err := manifest.Load(p, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newCache(t)
	_, err = Build(context.Background(), BuildOptions{Manifest: m, Cache: c, Builder: failingBuilder{}})
	var be *BuildError
	if !errors.As(err, &be) || be.ExitCode() != 2 || !strings.Contains(err.Error(), "build failed (failing builder, "+filepath.Join(dir, "train.Dockerfile")+")") {
		t.Fatalf("%v", err)
	}
}

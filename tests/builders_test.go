package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/tests/testbed"
)

// builderUnderTest is a builder backend and the engine of a node that loads and runs what
// it built (where the builder's own engine is Podman, that node's Podman engine).
type builderUnderTest struct {
	image.Builder
	engine func(t *testing.T, node string) *client.Client
}

// builders returns every builder backend, each connected to the testbed: Docker's classic
// builder and its BuildKit, a standalone buildkitd, and Podman's compatible build (through
// its Engine API, as DockerBuilder speaks to any engine), whose images go to Podman engines.
// A Podman builder's subtest requires the Podman engines (testbed.RequirePodman).
func builders(t *testing.T, tb *testbed.Testbed) map[string]builderUnderTest {
	docker := func(t *testing.T, node string) *client.Client { return tb.Engine(t, node) }
	out := map[string]builderUnderTest{
		"docker": {&image.DockerBuilder{Engine: tb.Engine(t, tb.Nodes[0])}, docker},
		// The engine's own BuildKit (what Docker >= 23 uses by default), asked for explicitly
		// since the testbed's engines default to the classic builder.
		"docker-buildkit": {&image.DockerBuilder{Engine: tb.Engine(t, tb.Nodes[0]), Version: "buildkit"}, docker},
	}
	if tb.BuildKitAddr == "" {
		t.Fatal("the testbed has no buildkitd (tests/testbed/up.sh starts one)")
	}
	bk, err := image.NewBuildKitBuilder(context.Background(), tb.BuildKitAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bk.Close() })
	out["buildkit"] = builderUnderTest{bk, docker}
	pm := testEngine{name: "podman", podman: true}
	out["podman"] = builderUnderTest{&lazyBuilder{of: func(t *testing.T) image.Builder {
		return &image.DockerBuilder{Engine: pm.client(t, tb, tb.Nodes[0])}
	}}, func(t *testing.T, node string) *client.Client { return pm.client(t, tb, node) }}
	return out
}

// lazyBuilder is a builder made in the subtest that uses it (bind), so that a missing
// Podman engine skips or fails that subtest alone.
type lazyBuilder struct {
	image.Builder
	of func(t *testing.T) image.Builder
}

// bind makes b's builder for the subtest t.
func (b builderUnderTest) bind(t *testing.T) builderUnderTest {
	t.Helper()
	if l, ok := b.Builder.(*lazyBuilder); ok {
		b.Builder = l.of(t)
	}
	return b
}

// One conformance suite for every builder (Podman's too): build, publish, verify, load on another node,
// compare ids, run; and a failing step is a BuildError (exit 2) with that step's log tail.
func TestBuilderConformance(t *testing.T) {
	tb := testbed.Require(t)
	for name, b := range builders(t, tb) {
		t.Run(name, func(t *testing.T) {
			b := b.bind(t)
			cache, err := image.OpenCache(tb.FreshDir(t))
			if err != nil {
				t.Fatal(err)
			}
			ctxDir := testbed.HelloContext(t, t.TempDir(), nil)
			m := loadManifest(t, testbed.WriteManifest(t, ctxDir, "conf-"+name))
			rec, err := image.Build(context.Background(), image.BuildOptions{Manifest: m, Cache: cache, Builder: b.Builder})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Builder != b.Name() || rec.CacheHit || rec.Size == 0 || !strings.HasPrefix(rec.ImageID, "sha256:") {
				t.Fatalf("record %+v", rec)
			}
			if _, err := cache.Verify(rec.Key, nil); err != nil {
				t.Fatal(err)
			}
			node := tb.Nodes[len(tb.Nodes)-1]
			eng := b.engine(t, node)
			removeImage(t, eng, rec.ImageID)
			res, err := image.Ensure(context.Background(), eng, cache, rec.Key, nil)
			if err != nil || !res.Loaded || res.ImageID != rec.ImageID {
				t.Fatalf("ensure on %s: %+v %v (want id %s)", node, res, err, rec.ImageID)
			}
			if out := testbed.RunImage(t, eng, rec.Tag, "/hello", name); !strings.Contains(out, "hello "+name) {
				t.Fatalf("run printed %q", out)
			}
			insp, err := eng.ImageInspect(context.Background(), rec.ImageID)
			if err != nil || insp.Config.Labels[image.LabelKey] != rec.Key {
				t.Fatalf("the image is not labelled with its key: %v %v", insp.Config, err)
			}

			// A failing step.
			df := filepath.Join(ctxDir, "Dockerfile")
			os.WriteFile(df, []byte("FROM scratch\nCOPY . /\nRUN [\"/hello\", \"fail\"]\n"), 0o644)
			m2 := loadManifest(t, filepath.Join(ctxDir, "benchmark.yaml"))
			_, err = image.Build(context.Background(), image.BuildOptions{Manifest: m2, Cache: cache, Builder: b.Builder})
			var be *image.BuildError
			if !errors.As(err, &be) || be.ExitCode() != 2 {
				t.Fatalf("failing build: %v", err)
			}
			if !strings.Contains(be.Step, "fail") || !strings.Contains(strings.Join(be.Tail, "\n"), "failing on purpose") {
				t.Fatalf("the error does not show the failing step and its log:\n%v", err)
			}
		})
	}
}

// <Dockerfile>.dockerignore takes the place of .dockerignore (Docker's rule) with every
// builder: what it ignores is not in the image, what only .dockerignore ignores is.
func TestDockerfileDockerignoreWithEveryBuilder(t *testing.T) {
	tb := testbed.Require(t)
	ctxDir := testbed.HelloContext(t, t.TempDir(), map[string][]byte{
		"kept.txt": []byte("kept\n"), "secret.txt": []byte("not for the image\n"), "notes.md": []byte("notes\n"),
		".dockerignore":                 []byte("notes.md\n"),
		"bench.Dockerfile":              []byte("FROM scratch\nARG CACHE_BUST\nCOPY . /\nCMD [\"/hello\"]\n"),
		"bench.Dockerfile.dockerignore": []byte("# Docker reads this one, not .dockerignore\nsecret.txt\n"),
	})
	for name, b := range builders(t, tb) {
		t.Run(name, func(t *testing.T) {
			b := b.bind(t)
			eng := b.engine(t, tb.Nodes[1])
			mf := filepath.Join(ctxDir, name+".yaml")
			body := fmt.Sprintf("name: ignore-%s\nimage:\n  dockerfile: bench.Dockerfile\n  buildArgs: {CACHE_BUST: %q}\nbenchmarks: [{name: hello, command: [/hello]}]\n",
				name, fmt.Sprint(time.Now().UnixNano()))
			if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			m := loadManifest(t, mf)
			cache, err := image.OpenCache(tb.FreshDir(t))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := image.Build(context.Background(), image.BuildOptions{Manifest: m, Cache: cache, Builder: b.Builder})
			if err != nil {
				t.Fatal(err)
			}
			removeImage(t, eng, rec.ImageID)
			if _, err := image.Ensure(context.Background(), eng, cache, rec.Key, nil); err != nil {
				t.Fatal(err)
			}
			created, err := eng.ContainerCreate(context.Background(), client.ContainerCreateOptions{Config: &container.Config{Image: rec.ImageID}})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
			for file, want := range map[string]bool{"/kept.txt": true, "/notes.md": true, "/hello": true, "/secret.txt": false} {
				_, err := eng.ContainerStatPath(context.Background(), created.ID, client.ContainerStatPathOptions{Path: file})
				if got := err == nil; got != want {
					t.Errorf("%s in the image: %v, want %v (%v)", file, got, want, err)
				}
			}
		})
	}
}

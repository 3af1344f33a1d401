package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
	"github.com/benchctl/benchctl/tests/testbed"
)

// loadManifest loads a manifest as benchctl does (catalog imports, this environment).
func loadManifest(t *testing.T, path string) *manifest.Manifest {
	t.Helper()
	m, _, err := models.LoadManifest(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// publishedHello builds the hello image of a fresh manifest (named name) on n1 into a
// fresh cache: the start of most image tests.
func publishedHello(t *testing.T, tb *testbed.Testbed, name string) (cache *image.Cache, manifestPath string, rec *image.Record) {
	t.Helper()
	cache, err := image.OpenCache(tb.FreshDir(t))
	if err != nil {
		t.Fatal(err)
	}
	manifestPath = testbed.WriteManifest(t, testbed.HelloContext(t, t.TempDir(), nil), name)
	return cache, manifestPath, buildOn(t, tb.Engine(t, tb.Nodes[0]), cache, manifestPath, false)
}

func buildOn(t *testing.T, eng image.Engine, cache *image.Cache, manifestPath string, noCache bool) *image.Record {
	t.Helper()
	m := loadManifest(t, manifestPath)
	rec, err := image.Build(context.Background(), image.BuildOptions{Manifest: m, Cache: cache,
		Builder: &image.DockerBuilder{Engine: eng}, NoCache: noCache})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func removeImage(t *testing.T, eng *client.Client, id string) {
	t.Helper()
	_, err := eng.ImageRemove(context.Background(), id, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) { // Docker: "No such image"; Podman: "image not known" (both 404)
		t.Fatalf("removing %s: %v", id, err)
	}
}

// Build on n1, publish, Ensure on every other node: same image id, and it runs there.
// A second build of the same manifest is a cache hit with no build or save call. The round
// trip runs on every kind of engine (testEngines): Docker's, and rootful and rootless
// Podman's, whose save/load must keep the image id too.
func TestImageBuildOnceLoadEverywhere(t *testing.T) {
	tb := testbed.Require(t)
	for _, e := range testEngines {
		t.Run(e.name, func(t *testing.T) {
			cache, err := image.OpenCache(tb.FreshDir(t))
			if err != nil {
				t.Fatal(err)
			}
			ctxDir := testbed.HelloContext(t, t.TempDir(), nil)
			mf := testbed.WriteManifest(t, ctxDir, "hello-"+e.name)
			n1 := &testbed.CountingEngine{Engine: e.client(t, tb, tb.Nodes[0])}
			rec := buildOn(t, n1, cache, mf, false)
			if rec.CacheHit || n1.Builds.Load() != 1 || n1.Saves.Load() != 1 {
				t.Fatalf("first build: hit %v, builds %d, saves %d", rec.CacheHit, n1.Builds.Load(), n1.Saves.Load())
			}
			if _, err := cache.Verify(rec.Key, nil); err != nil {
				t.Fatal(err)
			}
			for _, node := range tb.Nodes[1:] {
				eng := e.client(t, tb, node)
				removeImage(t, eng, rec.ImageID)
				res, err := image.Ensure(context.Background(), eng, cache, rec.Key, nil)
				if err != nil {
					t.Fatalf("%s: %v", node, err)
				}
				if !res.Loaded || res.ImageID != rec.ImageID {
					t.Fatalf("%s: loaded %v, id %s, want %s", node, res.Loaded, res.ImageID, rec.ImageID)
				}
				if out := testbed.RunImage(t, eng, rec.Tag, "/hello", node); !strings.Contains(out, "hello "+node) {
					t.Fatalf("%s: the loaded image printed %q", node, out)
				}
				// Warm: the engine has it, nothing is loaded.
				counting := &testbed.CountingEngine{Engine: eng}
				res, err = image.Ensure(context.Background(), counting, cache, rec.Key, nil)
				if err != nil || res.Loaded || counting.Loads.Load() != 0 {
					t.Fatalf("%s warm: %+v %v loads %d", node, res, err, counting.Loads.Load())
				}
			}
			again := &testbed.CountingEngine{Engine: e.client(t, tb, tb.Nodes[0])}
			rec2 := buildOn(t, again, cache, mf, false)
			if !rec2.CacheHit || rec2.Key != rec.Key || again.Builds.Load() != 0 || again.Saves.Load() != 0 {
				t.Fatalf("second build: hit %v, builds %d, saves %d", rec2.CacheHit, again.Builds.Load(), again.Saves.Load())
			}
		})
	}
}

// A flipped byte in a published tar: never loaded, reported, moved aside; a rebuild works.
func TestImageCorruptTarIsNeverLoaded(t *testing.T) {
	tb := testbed.Require(t)
	cache, mf, rec := publishedHello(t, tb, "corrupt")
	f, err := os.OpenFile(rec.Tar, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, rec.Size/2)
	b[0] ^= 0x55
	f.WriteAt(b, rec.Size/2)
	f.Close()

	n2 := tb.Engine(t, tb.Nodes[1])
	removeImage(t, n2, rec.ImageID)
	_, err = image.Ensure(context.Background(), n2, cache, rec.Key, nil)
	var ce *image.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("corrupt tar: got %v", err)
	}
	if _, err := n2.ImageInspect(context.Background(), rec.ImageID); err == nil {
		t.Fatal("the corrupt tar was loaded")
	}
	if _, err := cache.Lookup(rec.Key); !errors.Is(err, image.ErrNotCached) {
		t.Fatalf("the corrupt entry is still visible: %v", err)
	}
	if _, err := os.Stat(ce.MovedTo); err != nil {
		t.Fatalf("not moved aside: %v", err)
	}
	// The rebuild path: build again (not a cache hit), then it loads.
	rec2 := buildOn(t, tb.Engine(t, tb.Nodes[0]), cache, mf, false)
	if rec2.CacheHit {
		t.Fatal("rebuild was a cache hit")
	}
	if res, err := image.Ensure(context.Background(), n2, cache, rec2.Key, nil); err != nil || !res.Loaded {
		t.Fatalf("after rebuild: %+v %v", res, err)
	}
	// An entry published before loads verified XXH64 (no "xxh64" in its metadata) loads
	// by its sha256.
	metaPath := strings.TrimSuffix(rec2.Tar, ".tar") + ".json"
	raw, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(raw, &meta); err != nil || meta["xxh64"] == nil {
		t.Fatalf("metadata without xxh64: %s (%v)", raw, err)
	}
	delete(meta, "xxh64")
	raw, _ = json.Marshal(meta)
	if err := os.WriteFile(metaPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	n3 := tb.Engine(t, tb.Nodes[2])
	removeImage(t, n3, rec2.ImageID)
	if res, err := image.Ensure(context.Background(), n3, cache, rec2.Key, nil); err != nil || !res.Loaded || res.ImageID != rec2.ImageID {
		t.Fatalf("an entry without xxh64: %+v %v", res, err)
	}
}

// An entry that lost its metadata (a publisher killed between files): a worker's Ensure
// takes it as not cached instead of failing, and the next build rebuilds over it.
func TestImageIncompleteEntryIsRebuiltOver(t *testing.T) {
	tb := testbed.Require(t)
	cache, mf, rec := publishedHello(t, tb, "incomplete")
	if err := os.Remove(strings.TrimSuffix(rec.Tar, ".tar") + ".json"); err != nil {
		t.Fatal(err)
	}
	n2 := tb.Engine(t, tb.Nodes[1])
	removeImage(t, n2, rec.ImageID)
	var inc *image.IncompleteError
	if _, err := image.Ensure(context.Background(), n2, cache, rec.Key, nil); !errors.Is(err, image.ErrNotCached) || !errors.As(err, &inc) {
		t.Fatalf("Ensure on an incomplete entry: %v, want not cached, saying it is incomplete", err)
	}
	// benchctl cache load says so too, with what to do (the key in upper case is the same key).
	cmd := exec.Command(tb.Benchctl(t), "cache", "load", strings.ToUpper(rec.Key[:8]), "--shared-dir", filepath.Dir(filepath.Dir(filepath.Dir(rec.Tar))))
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[1]])
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "is incomplete (no valid metadata") || !strings.Contains(string(out), "cache prune") {
		t.Fatalf("cache load of an incomplete entry: exit %d\n%s", code, out)
	}
	rec2 := buildOn(t, tb.Engine(t, tb.Nodes[0]), cache, mf, false)
	if rec2.CacheHit {
		t.Fatal("an incomplete entry counted as a cache hit")
	}
	if res, err := image.Ensure(context.Background(), n2, cache, rec2.Key, nil); err != nil || !res.Loaded {
		t.Fatalf("after the rebuild: %+v %v", res, err)
	}
}

// A --no-cache rebuild of a published key while another node loads it: the load either
// gets a consistent entry or says it was replaced; nothing is quarantined as corrupt.
func TestImageRepublishWhileLoading(t *testing.T) {
	tb := testbed.Require(t)
	cache, mf, rec := publishedHello(t, tb, "republish")
	n2 := tb.Engine(t, tb.Nodes[1])
	m := loadManifest(t, mf)
	n1 := tb.Engine(t, tb.Nodes[0])
	done := make(chan error, 1)
	go func() { // the republish (no t.Fatal off the test goroutine)
		_, err := image.Build(context.Background(), image.BuildOptions{Manifest: m, Cache: cache,
			Builder: &image.DockerBuilder{Engine: n1}, NoCache: true})
		done <- err
	}()
	for i := 0; ; i++ {
		removeImage(t, n2, rec.ImageID)
		_, err := image.Ensure(context.Background(), n2, cache, rec.Key, nil)
		var ce *image.CorruptError
		if errors.As(err, &ce) {
			t.Fatalf("load %d during a republish: a good entry was quarantined: %v", i, err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the republish: %v", err)
			}
			if _, err := cache.Verify(rec.Key, nil); err != nil {
				t.Fatalf("after the republish: %v", err)
			}
			return
		default:
		}
	}
}

// Two concurrent `benchctl build` processes of one manifest: one builds, the other waits
// and hits the cache; the tar is intact.
func TestImageConcurrentBuildsBuildOnce(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	shared := tb.FreshDir(t)
	ctxDir := testbed.HelloContext(t, t.TempDir(), map[string][]byte{"pad.bin": testutil.RandomBytes(t, 64<<20)})
	mf := testbed.WriteManifest(t, ctxDir, "concurrent")
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "build", "--manifest", mf, "--shared-dir", shared)
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	hits := 0
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("build %d: %v\n%s", i, errs[i], outs[i])
		}
		if strings.Contains(outs[i], "cache hit: yes") {
			hits++
		}
	}
	if hits != 1 {
		t.Fatalf("want exactly one cache hit, got %d:\n%s\n---\n%s", hits, outs[0], outs[1])
	}
	if !strings.Contains(outs[0]+outs[1], "waiting for it") {
		t.Errorf("neither build said it waited for the other:\n%s\n---\n%s", outs[0], outs[1])
	}
	cache, _ := image.OpenCache(shared)
	entries, err := cache.List()
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries %v %v", entries, err)
	}
	if _, err := cache.Verify(entries[0].Key, nil); err != nil {
		t.Fatal(err)
	}
}

// A builder killed with SIGKILL in the middle of saving leaves no final entry.
func TestImageKilledBuilderLeavesNoEntry(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	shared := tb.FreshDir(t)
	ctxDir := testbed.HelloContext(t, t.TempDir(), map[string][]byte{"pad.bin": testutil.RandomBytes(t, 400<<20)})
	mf := testbed.WriteManifest(t, ctxDir, "killed")
	cmd := exec.Command(bin, "build", "--manifest", mf, "--shared-dir", shared)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dir := image.CacheLayout{Shared: shared}.Dir()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tar.tmp-*")); len(tmp) > 0 {
			if st, err := os.Stat(tmp[0]); err == nil && st.Size() > 1<<20 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the save never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if tars, _ := filepath.Glob(filepath.Join(dir, "*.tar")); len(tars) != 0 {
		t.Fatalf("a killed builder left a final entry: %v", tars)
	}
	cache, _ := image.OpenCache(shared)
	if entries, _ := cache.List(); len(entries) != 0 {
		t.Fatalf("entries after kill: %+v", entries)
	}
	// The next build completes (the lock died with the process).
	again := exec.Command(bin, "build", "--manifest", mf, "--shared-dir", shared)
	again.Env = cmd.Env
	if out, err := again.CombinedOutput(); err != nil {
		t.Fatalf("build after the kill: %v\n%s", err, out)
	}
	if entries, _ := cache.List(); len(entries) != 1 {
		t.Fatalf("after rebuild: %+v", entries)
	}
}

// A context file this user cannot read is bad input (exit 4) with the fix, before any
// engine is asked; so are an ignore file that is a folder and a shared directory that is a
// file. Run as an unprivileged user when the tests run as root (root reads anything).
func TestBuildInputsThatCannotBeRead(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	dir, err := os.MkdirTemp("", "unreadable")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "ctx"), 0o755)
	os.MkdirAll(filepath.Join(dir, "shared"), 0o777)
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Join(dir, "shared"), 0o777)
	os.WriteFile(filepath.Join(dir, "ctx", "Dockerfile"), []byte("FROM scratch\nCOPY . /\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ctx", "secret.key"), []byte("x"), 0o000)
	os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644)
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: unreadable\nimage:\n  dockerfile: ctx/Dockerfile\n  context: ctx\nbenchmarks: [{name: b, command: [/b]}]\n"), 0o644)
	build := func(shared string, asUser bool) (int, string) {
		cmd := exec.Command(bin, "build", "--manifest", mf, "--shared-dir", shared)
		cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+filepath.Join(dir, "no-engine.sock"))
		if asUser && os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := build(filepath.Join(dir, "shared"), true); code != 4 || !strings.Contains(out, "secret.key: permission denied") ||
		!strings.Contains(out, "make it readable by this user, or list it in "+filepath.Join(dir, "ctx", ".dockerignore")) {
		t.Errorf("unreadable context file: exit %d\n%s", code, out)
	}
	os.Chmod(filepath.Join(dir, "ctx", "secret.key"), 0o644)
	if code, out := build(filepath.Join(dir, "afile"), false); code != 4 || !strings.Contains(out, "is not a folder") {
		t.Errorf("shared dir that is a file: exit %d\n%s", code, out)
	}
	os.Mkdir(filepath.Join(dir, "ctx", ".dockerignore"), 0o755)
	if code, out := build(filepath.Join(dir, "shared"), false); code != 4 || !strings.Contains(out, ".dockerignore cannot be read") {
		t.Errorf("an ignore file that is a folder: exit %d\n%s", code, out)
	}
	os.Remove(filepath.Join(dir, "ctx", ".dockerignore"))
	if err := syscall.Mkfifo(filepath.Join(dir, "ctx", ".dockerignore"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := build(filepath.Join(dir, "shared"), false); code != 4 || !strings.Contains(out, ".dockerignore cannot be read (") ||
		!strings.Contains(out, "is a FIFO (named pipe), not a regular file") {
		t.Errorf("an ignore file that is a FIFO (it blocked the build): exit %d\n%s", code, out)
	}
}

// A node whose engine has the image under another tag only (retagged, or its tag moved to
// another image) runs it by id: containers start from exactly the image that was ensured.
func TestRunUsesTheImageIDNotItsTag(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	shared := tb.FreshDir(t)
	ctxDir := testbed.HelloContext(t, t.TempDir(), nil)
	mf := testbed.WriteManifest(t, ctxDir, "retagged")
	node := tb.Nodes[1]
	run := func(job string, args ...string) string {
		cmd := exec.Command(bin, append([]string{"run", "--manifest", mf, "--shared-dir", shared}, args...)...)
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+tb.Sockets[node], "BENCHCTL_JOB_ID="+job)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		return string(out)
	}
	run(fmt.Sprintf("retag-%d", time.Now().UnixNano()))
	eng := tb.Engine(t, node)
	key := manifestKey(t, mf)
	tag := image.DefaultTag("retagged", key)
	alias := "benchctl-e2e/alias:" + image.ShortKey(key)
	if _, err := eng.ImageTag(context.Background(), client.ImageTagOptions{Source: tag, Target: alias}); err != nil {
		t.Fatal(err)
	}
	defer eng.ImageRemove(context.Background(), alias, client.ImageRemoveOptions{Force: true})
	if _, err := eng.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf("retag-%d", time.Now().UnixNano())
	if out := run(job, "--benchmarks", "hello"); !strings.Contains(out, "hello world") {
		t.Fatalf("second run:\n%s", out)
	}
	// --benchmarks is recorded in job.json, for collect.
	var j struct{ Benchmarks []string }
	data, err := os.ReadFile(jobdir.Layout{Shared: shared}.Job(job, 0).JobFile())
	if err != nil || json.Unmarshal(data, &j) != nil || len(j.Benchmarks) != 1 || j.Benchmarks[0] != "hello" {
		t.Fatalf("job.json benchmarks %v (%v)", j.Benchmarks, err)
	}
}

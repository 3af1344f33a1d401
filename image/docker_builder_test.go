package image

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
)

// A context file that vanishes while the context streams to a reachable engine is a failed
// build naming the file (exit 2), not an unreachable engine. The engine is a stub: the
// failure has to happen between the key's walk and the upload, which a real one cannot time.
func TestContextReadErrorIsNotAnUnreachableEngine(t *testing.T) {
	dir, err := os.MkdirTemp("", "bctx") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctxDir := filepath.Join(dir, "ctx")
	os.MkdirAll(ctxDir, 0o755)
	os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY . /\n"), 0o644)
	os.WriteFile(filepath.Join(ctxDir, "a.bin"), make([]byte, 32<<20), 0o644) // still streaming when b.txt goes
	os.WriteFile(filepath.Join(ctxDir, "b.txt"), []byte("b"), 0o644)
	cl := testutil.StubEngine(t, func(w http.ResponseWriter, r *http.Request) {
		os.Remove(filepath.Join(ctxDir, "b.txt"))
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"stream":"ok"}` + "\n"))
	})
	b := &DockerBuilder{Engine: cl, Version: "classic"}
	_, err = b.Build(t.Context(), BuildRequest{Input: BuildInput{Dockerfile: filepath.Join(ctxDir, "Dockerfile"), Context: ctxDir},
		Key: strings.Repeat("ab", 32), Tag: "x:y"})
	var be *BuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "sending the build context") || !strings.Contains(err.Error(), "b.txt") ||
		strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("got %v", err)
	}
}

// An engine that answers a load before it has read the whole tar (it rejected it): the
// result is read only after the client is done with the tar (go test -race), and the
// engine's message is reported.
func TestLoadRejectedEarlyByTheEngine(t *testing.T) {
	c := newCache(t)
	key := strings.Repeat("7e", 32)
	publishBytes(t, c, key, make([]byte, 16<<20))
	cl := testutil.StubEngine(t, func(w http.ResponseWriter, r *http.Request) {
		io.CopyN(io.Discard, r.Body, 2<<20)
		w.Write([]byte(`{"errorDetail":{"message":"unexpected tar"},"error":"unexpected tar"}` + "\n"))
	})
	for range 10 {
		_, _, err := load(t.Context(), cl, c, key, nil)
		if err == nil || !strings.Contains(err.Error(), "unexpected tar") {
			t.Fatalf("got %v", err)
		}
	}
	if _, err := c.Lookup(key); err != nil {
		t.Fatalf("the intact entry was moved aside: %v", err)
	}
}

// Progress: the context upload and the load report bytes against a total, and their last
// report is the whole of it.
func TestContextAndLoadProgress(t *testing.T) {
	ctxDir := t.TempDir()
	os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY . /\n"), 0o644)
	os.WriteFile(filepath.Join(ctxDir, "a.bin"), make([]byte, 3<<20+5), 0o644)
	var got int64
	cl := testutil.StubEngine(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got = n
		w.Write([]byte(`{"errorDetail":{"message":"stub engine: stop here"}}` + "\n"))
	})
	var last []Progress
	record := func(p Progress) {
		if p.Final {
			last = append(last, p)
		}
	}
	_, err := (&DockerBuilder{Engine: cl, Version: "classic"}).Build(t.Context(), BuildRequest{
		Input: BuildInput{Dockerfile: filepath.Join(ctxDir, "Dockerfile"), Context: ctxDir}, Key: strings.Repeat("ab", 32), Tag: "x:y", Progress: record})
	if err == nil || !strings.Contains(err.Error(), "stop here") {
		t.Fatalf("build: %v", err)
	}
	if len(last) != 1 || last[0].Phase != "context" || last[0].Done != got || last[0].Total != got {
		t.Fatalf("context progress %+v, the engine read %d bytes", last, got)
	}

	c := newCache(t)
	key := strings.Repeat("5e", 32)
	publishBytes(t, c, key, make([]byte, 5<<20+7))
	last = nil
	_, _, err = load(t.Context(), cl, c, key, record)
	if err == nil || len(last) != 1 || last[0].Phase != "load" || last[0].Done != 5<<20+7 || last[0].Total != 5<<20+7 {
		t.Fatalf("load progress %+v (%v)", last, err)
	}
}

// Package testutil holds the helpers that tests of several packages share: an environment
// lookup from a map, random bytes, a buffer safe for concurrent writers, and a stub Engine
// API server. Only tests import it.
package testutil

import (
	"crypto/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/client"
)

// LookupOf is an os.LookupEnv that answers from m.
func LookupOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// RandomBytes is n random bytes; it fails the test if the system cannot give them.
func RandomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// SyncBuffer is a log sink safe for concurrent writers (a node's or a rank's log written
// from several goroutines).
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// StubEngine serves the Engine API's pings and hands every other request to handle, on a
// unix socket; for failures a real engine cannot be made to produce on cue.
func StubEngine(t testing.TB, handle http.HandlerFunc) *client.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "bstub") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Header().Set("Api-Version", "1.44")
			w.Write([]byte("OK"))
			return
		}
		handle(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	cl, err := client.New(client.WithHost("unix://"+sock), client.WithAPIVersion("1.44"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

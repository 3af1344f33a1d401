package distribution

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/image"
)

// stubEngine serves the Engine API's pings and hands every other request to handle, on a
// unix socket; for failures a real engine cannot be made to produce on cue.
func stubEngine(t *testing.T, handle http.HandlerFunc) *client.Client {
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

// newCache is an empty cache in a test's temp folder.
func newCache(t *testing.T) *image.Cache {
	t.Helper()
	c, err := image.OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// publishBytes publishes data under key as an image of id sha256:x.
func publishBytes(t *testing.T, c *image.Cache, key string, data []byte) {
	t.Helper()
	_, err := c.Publish(context.Background(), key, image.Meta{ImageID: "sha256:x"}, 0, func(w io.Writer, m *image.Meta) error {
		_, err := w.Write(data)
		return err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

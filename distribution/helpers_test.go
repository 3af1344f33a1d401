package distribution

import (
	"context"
	"io"
	"testing"

	"github.com/benchctl/benchctl/image"
)

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

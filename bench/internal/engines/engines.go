// Package engines has what the testbed benchmarks share for the Docker Engines and their
// inputs: a client per node, removing an image, an incompressible payload file. A failure
// ends the benchmark (timing.Check).
package engines

import (
	"context"
	"crypto/rand"
	"io"
	"os"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/bench/internal/timing"
)

// Connect is a client of the engine at host (a DOCKER_HOST value).
func Connect(host string) *client.Client {
	c, err := client.New(client.WithHost(host))
	timing.Check(err)
	return c
}

// RemoveImage removes image id from c, if it is there.
func RemoveImage(c *client.Client, id string) {
	_, _ = c.ImageRemove(context.Background(), id, client.ImageRemoveOptions{Force: true, PruneChildren: true})
}

// WriteRandom writes n random bytes to path: a payload no compression or layer dedup helps.
func WriteRandom(path string, n int64) {
	f, err := os.Create(path)
	timing.Check(err)
	_, err = io.CopyN(f, rand.Reader, n)
	timing.Check(err)
	timing.Check(f.Close())
}

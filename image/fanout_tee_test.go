package image

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/moby/moby/client"
)

// saveEngine is an engine whose `docker save` gives data.
type saveEngine struct {
	Engine
	data   []byte
	closed chan struct{}
}

func (e *saveEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	return client.ImageInspectResult{}, errors.New("not asked for here")
}

type closeNotify struct {
	io.Reader
	closed chan struct{}
}

func (c closeNotify) Close() error { close(c.closed); return nil }

func (e *saveEngine) ImageSave(context.Context, []string, ...client.ImageSaveOption) (client.ImageSaveResult, error) {
	e.closed = make(chan struct{})
	return closeNotify{bytes.NewReader(e.data), e.closed}, nil
}

func teeCase(t *testing.T, size int) (*Cache, *saveEngine, string) {
	t.Helper()
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	rand.Read(data)
	return c, &saveEngine{data: data}, hex.EncodeToString(make([]byte, 32))
}

func leftovers(t *testing.T, c *Cache) []string {
	ents, _ := os.ReadDir(c.Dir)
	var out []string
	for _, e := range ents {
		if e.Name() != "."+hex.EncodeToString(make([]byte, 32))+".lock" {
			out = append(out, e.Name())
		}
	}
	return out
}

// One save feeds the stream and the cache entry: both get every byte, and the entry's
// checksum is the data's.
func TestStreamAndPublishWritesWhatItStreams(t *testing.T) {
	c, eng, key := teeCase(t, 9<<20+17)
	src, tee, err := StreamAndPublish(context.Background(), eng, c, key, "img:1", Meta{ImageID: "sha256:1", Tags: []string{"img:1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(src.R)
	if err != nil || !bytes.Equal(got, eng.data) || src.Size != -1 {
		t.Fatalf("the stream got %d bytes of %d: %v", len(got), len(eng.data), err)
	}
	e, err := tee.Wait()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(eng.data)
	if e.SHA256 != hex.EncodeToString(sum[:]) || e.Size != int64(len(eng.data)) || e.ImageID != "sha256:1" {
		t.Errorf("entry %+v", e.Meta)
	}
	if _, err := c.Verify(key, nil); err != nil {
		t.Error(err)
	}
	if err := tee.Close(); err != nil {
		t.Error(err)
	}
	<-eng.closed
}

// A stream that stops half-way (a rank failed): nothing is published, no temp file stays,
// and the save is closed.
func TestStreamAndPublishCutPublishesNothing(t *testing.T) {
	c, eng, key := teeCase(t, 4<<20)
	src, tee, err := StreamAndPublish(context.Background(), eng, c, key, "img:1", Meta{ImageID: "sha256:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, src.R, 1<<20); err != nil {
		t.Fatal(err)
	}
	tee.Close()
	<-eng.closed
	if _, err := tee.Wait(); err == nil {
		t.Error("a cut stream published an entry")
	}
	if _, err := c.Lookup(key); !errors.Is(err, ErrNotCached) {
		t.Errorf("lookup after a cut: %v", err)
	}
	if l := leftovers(t, c); len(l) != 0 {
		t.Errorf("left in the cache: %v", l)
	}
}

// Another process holds the key's lock (it is publishing the same image): the stream goes
// on at full length, and this one publishes nothing, saying why.
func TestStreamAndPublishLeavesALockedKeyAlone(t *testing.T) {
	c, eng, key := teeCase(t, 3<<20)
	lock, err := c.Lock(context.Background(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	src, tee, err := StreamAndPublish(context.Background(), eng, c, key, "img:1", Meta{ImageID: "sha256:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tee.Close()
	got, err := io.ReadAll(src.R)
	if err != nil || !bytes.Equal(got, eng.data) {
		t.Fatalf("the stream got %d bytes of %d: %v", len(got), len(eng.data), err)
	}
	if _, err := tee.Wait(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("another process holds the cache lock")) {
		t.Errorf("publish beside a held lock: %v", err)
	}
	if l := leftovers(t, c); len(l) != 0 {
		t.Errorf("left in the cache: %v", l)
	}
}

// A cache that cannot be written (its folder gone): the stream still gets every byte.
func TestStreamAndPublishCacheFailureKeepsTheStream(t *testing.T) {
	c, eng, key := teeCase(t, 2<<20)
	c.Dir = c.Dir + "/missing/folder"
	src, tee, err := StreamAndPublish(context.Background(), eng, c, key, "img:1", Meta{ImageID: "sha256:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tee.Close()
	got, err := io.ReadAll(src.R)
	if err != nil || !bytes.Equal(got, eng.data) {
		t.Fatalf("the stream got %d bytes of %d: %v", len(got), len(eng.data), err)
	}
	if _, err := tee.Wait(); err == nil {
		t.Error("published into a missing folder")
	}
}

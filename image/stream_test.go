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
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/moby/moby/client"
)

// saveEngine is an engine whose `docker save` gives data.
type saveEngine struct {
	Engine
	data   []byte
	closed chan struct{}
	tagIs  string   // the id ImageInspect gives for any ref ("": not found)
	saved  []string // the refs saved
}

func (e *saveEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if e.tagIs == "" {
		return client.ImageInspectResult{}, errors.New("no such image")
	}
	var r client.ImageInspectResult
	r.ID = e.tagIs
	return r, nil
}

type closeNotify struct {
	io.Reader
	closed chan struct{}
}

func (c closeNotify) Close() error { close(c.closed); return nil }

func (e *saveEngine) ImageSave(_ context.Context, refs []string, _ ...client.ImageSaveOption) (client.ImageSaveResult, error) {
	e.saved = append(e.saved, refs...)
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

// The tag was built for the image, but by the time rank 0 streams it another build may
// have moved it: the image is saved by the tag only while the tag still names it.
func TestStreamAndPublishSavesTheImageNotWhatTheTagBecame(t *testing.T) {
	for _, c := range []struct{ tagIs, want string }{{"sha256:1", "img:1"}, {"sha256:other", "sha256:1"}, {"", "sha256:1"}} {
		cache, eng, key := teeCase(t, 1<<10)
		eng.tagIs = c.tagIs
		src, tee, err := StreamAndPublish(context.Background(), eng, cache, key, "img:1", Meta{ImageID: "sha256:1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, src.R)
		tee.Wait()
		tee.Close()
		if len(eng.saved) != 1 || eng.saved[0] != c.want {
			t.Errorf("tag names %q: saved %v, want %s", c.tagIs, eng.saved, c.want)
		}
	}
}

// A cache write that takes nothing (a hung network filesystem) is given up after teeStall:
// the stream gets every byte, waiting teeStall for it once and no more, and nothing is
// published. In a synctest bubble: teeStall (10 s) passes on its fake clock.
func TestStreamAndPublishGivesUpAStalledCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, eng, key := teeCase(t, 24<<20)
		hang := make(chan struct{})
		release := sync.OnceFunc(func() { close(hang) })
		defer release()
		stalled := func(Progress) { <-hang } // the cache writer's progress reports do not return
		src, tee, err := StreamAndPublish(context.Background(), eng, c, key, "img:1", Meta{ImageID: "sha256:1"}, stalled)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var got []byte
		buf := make([]byte, 64<<10) // as the fan-out reads: many pieces, more than the tee holds
		for {
			n, err := src.R.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, eng.data) {
			t.Fatalf("the stream got %d bytes of %d", len(got), len(eng.data))
		}
		d := time.Since(start) // the bubble's clock: only the waits count
		t.Logf("the stream waited %v behind the stalled cache", d)
		if d > teeStall {
			t.Errorf("the stream waited %v behind a stalled cache, more than teeStall (%v)", d, teeStall)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := tee.Wait(); err == nil || !strings.Contains(err.Error(), "took nothing") {
				t.Errorf("Wait: %v", err)
			}
		}()
		release() // let the stalled writer see its input has failed
		<-done
		tee.Close()
		if _, err := c.Lookup(key); !errors.Is(err, ErrNotCached) {
			t.Errorf("lookup after a stalled cache: %v", err)
		}
	})
}

// After a stream that stopped early (a rank failed), Finish reads the rest of the save
// into the cache: the next attempt finds the image cached.
func TestStreamAndPublishFinishAfterAFailedStream(t *testing.T) {
	c, eng, key := teeCase(t, 5<<20+3)
	src, tee, err := StreamAndPublish(context.Background(), eng, c, key, "img:1", Meta{ImageID: "sha256:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tee.Close()
	if _, err := io.CopyN(io.Discard, src.R, 1<<20+7); err != nil {
		t.Fatal(err)
	}
	e, err := tee.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(eng.data)
	if e.SHA256 != hex.EncodeToString(sum[:]) || e.Size != int64(len(eng.data)) {
		t.Errorf("the finished entry is %d bytes, sha256 %s", e.Size, e.SHA256)
	}
}

// An entry published by another process after rank 0 looked: left as it is, and given.
func TestStreamAndPublishLeavesAnEntryPublishedMeanwhile(t *testing.T) {
	c, eng, key := teeCase(t, 1<<20)
	other := []byte("the other process's tar")
	if _, err := c.Publish(context.Background(), key, Meta{ImageID: "sha256:1"}, 0, func(w io.Writer, _ *Meta) error {
		_, err := w.Write(other)
		return err
	}, nil); err != nil {
		t.Fatal(err)
	}
	src, tee, err := StreamAndPublish(context.Background(), eng, c, key, "img:1", Meta{ImageID: "sha256:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tee.Close()
	if got, err := io.ReadAll(src.R); err != nil || !bytes.Equal(got, eng.data) {
		t.Fatalf("the stream got %d bytes: %v", len(got), err)
	}
	e, err := tee.Wait()
	if err != nil || e.Size != int64(len(other)) {
		t.Fatalf("Wait: %+v %v", e, err)
	}
	if b, _ := os.ReadFile(e.Tar); !bytes.Equal(b, other) {
		t.Error("the entry published meanwhile was replaced")
	}
}

package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand"
	"os"
	"strings"
	"testing"
)

func TestVerifyingReaderPassesIntactData(t *testing.T) {
	for _, size := range []int{0, 10, chunkSize - 1, chunkSize, chunkSize + 1, 5<<20 + 17} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(size))).Read(data)
		sum := sha256.Sum256(data)
		vr := newVerifyingReader(iotestOneByteMaybe(bytes.NewReader(data), size), hex.EncodeToString(sum[:]), nil)
		got, err := io.ReadAll(vr)
		vr.Close()
		if err != nil || !bytes.Equal(got, data) || !vr.verified {
			t.Fatalf("size %d: err %v, equal %v, verified %v", size, err, bytes.Equal(got, data), vr.verified)
		}
	}
}

func TestVerifyingReaderWithholdsTheTailOfCorruptData(t *testing.T) {
	data := make([]byte, 3<<20)
	rand.New(rand.NewSource(1)).Read(data)
	sum := sha256.Sum256(data)
	data[len(data)/2] ^= 0xff // flip a byte after the checksum was taken
	vr := newVerifyingReader(bytes.NewReader(data), hex.EncodeToString(sum[:]), nil)
	got, err := io.ReadAll(vr)
	if err == nil || vr.mismatch == "" {
		t.Fatal("corruption not detected")
	}
	if len(got) > len(data)-chunkSize {
		t.Fatalf("released %d bytes of %d: the tail must be withheld", len(got), len(data))
	}
}

// iotestOneByteMaybe returns small reads for small inputs, to exercise the loop.
func iotestOneByteMaybe(r io.Reader, size int) io.Reader {
	if size < 1000 {
		return &oneByte{r}
	}
	return r
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestPublishRecordsSizeWithoutProgress(t *testing.T) {
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	e, err := c.Publish(t.Context(), key, Meta{ImageID: "sha256:x"}, func(w io.Writer, _ *Meta) error {
		_, err := w.Write(make([]byte, 12345))
		return err
	}, nil)
	if err != nil || e.Size != 12345 {
		t.Fatalf("size %d, %v", e.Size, err)
	}
	if got, err := c.Lookup(key); err != nil || got.SHA256 != e.SHA256 || got.Size != 12345 {
		t.Fatalf("lookup %+v %v", got, err)
	}
	if _, err := c.Verify(key, nil); err != nil {
		t.Fatal(err)
	}
}

func TestHashingWriterWritesAndHashesEverything(t *testing.T) {
	for _, size := range []int{0, 1, chunkSize - 1, chunkSize, 3*chunkSize + 7} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(size))).Read(data)
		var out bytes.Buffer
		hw := newHashingWriter(&out)
		for p := data; len(p) > 0; {
			k := min(len(p), 32<<10+3)
			hw.Write(p[:k])
			p = p[k:]
		}
		if err := hw.Close(); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if !bytes.Equal(out.Bytes(), data) || hw.Sum() != hex.EncodeToString(sum[:]) {
			t.Fatalf("size %d: wrote %d bytes, sum %s", size, out.Len(), hw.Sum())
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

func TestHashingWriterReportsWriteErrors(t *testing.T) {
	hw := newHashingWriter(failingWriter{})
	hw.Write(make([]byte, 3*chunkSize))
	if err := hw.Close(); err == nil {
		t.Fatal("a failed write was not reported")
	}
}

func publishBytes(t *testing.T, c *Cache, key string, data []byte) {
	t.Helper()
	_, err := c.Publish(context.Background(), key, Meta{ImageID: "sha256:x"}, func(w io.Writer, m *Meta) error {
		_, err := w.Write(data)
		return err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

// A republish while a reader holds the old tar is not corruption: nothing is quarantined.
func TestRepublishIsNotCorruption(t *testing.T) {
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("ab", 32)
	publishBytes(t, c, key, []byte("old tar"))
	e, f, err := c.open(key)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	publishBytes(t, c, key, []byte("new tar, other content"))
	// The reader hashed the old tar; against the new checksum it would mismatch.
	err = c.mismatch(key, f, "0000000000000000000000000000000000000000000000000000000000000000", "1111")
	var re *ReplacedError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *ReplacedError", err)
	}
	if _, err := c.Verify(key, nil); err != nil {
		t.Fatalf("the new entry: %v", err)
	}
	_ = e
}

// An entry without metadata or checksum counts as not cached; verify moves it aside.
func TestIncompleteEntry(t *testing.T) {
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("cd", 32)
	publishBytes(t, c, key, []byte("tar"))
	os.Remove(c.metaPath(key))
	_, err = c.Lookup(key)
	var inc *IncompleteError
	if !errors.As(err, &inc) || !errors.Is(err, ErrNotCached) {
		t.Fatalf("lookup: %v", err)
	}
	if _, err := c.Verify(key, nil); err == nil || !strings.Contains(err.Error(), "moved aside") {
		t.Fatalf("verify: %v", err)
	}
	if _, err := os.Stat(c.tarPath(key)); !os.IsNotExist(err) {
		t.Fatal("the incomplete entry's tar is still in place")
	}
}

func TestPruneRemovesIncompleteEntries(t *testing.T) {
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good, bad := strings.Repeat("01", 32), strings.Repeat("ef", 32)
	publishBytes(t, c, good, []byte("a"))
	publishBytes(t, c, bad, []byte("b"))
	os.Remove(c.sumPath(bad))
	pruned, err := c.Prune(PruneOptions{})
	if err != nil || len(pruned) != 1 || pruned[0].Key != bad {
		t.Fatalf("%+v %v", pruned, err)
	}
	if _, err := c.Lookup(good); err != nil {
		t.Fatalf("the complete entry: %v", err)
	}
}

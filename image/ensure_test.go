package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// sums returns data's checksum of each kind a load may verify.
func sums(data []byte) []checksum {
	s := sha256.Sum256(data)
	x := xxhash.Sum64(data)
	return []checksum{
		{Algo: "sha256", Want: hex.EncodeToString(s[:])},
		{Algo: "xxh64", Want: hex.EncodeToString(binary.BigEndian.AppendUint64(nil, x))},
	}
}

func TestVerifyingReaderPassesIntactData(t *testing.T) {
	for _, size := range []int{0, 10, chunkSize - 1, chunkSize, chunkSize + 1, 2 * chunkSize, 5<<20 + 17} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(size))).Read(data)
		for _, sum := range sums(data) {
			vr := newVerifyingReader(iotestOneByteMaybe(bytes.NewReader(data), size), sum, nil)
			got, err := io.ReadAll(vr)
			if err != nil || !bytes.Equal(got, data) || !vr.verified {
				t.Fatalf("size %d, %s: err %v, equal %v, verified %v", size, sum.Algo, err, bytes.Equal(got, data), vr.verified)
			}
		}
	}
}

func TestVerifyingReaderWithholdsTheTailOfCorruptData(t *testing.T) {
	for _, size := range []int{100, chunkSize, 3 << 20, 3<<20 + 5} {
		for _, at := range []int{0, size / 2, size - 1} {
			data := make([]byte, size)
			rand.New(rand.NewSource(1)).Read(data)
			for _, sum := range sums(data) {
				bad := bytes.Clone(data)
				bad[at] ^= 0x01 // flip a bit after the checksum was taken
				vr := newVerifyingReader(bytes.NewReader(bad), sum, nil)
				got, err := io.ReadAll(vr)
				if err == nil || vr.mismatch == "" || vr.verified || !strings.Contains(err.Error(), sum.Algo) {
					t.Fatalf("size %d, byte %d, %s: corruption not detected (%v)", size, at, sum.Algo, err)
				}
				if withheld := size - len(got); withheld < min(size, chunkSize) {
					t.Fatalf("size %d, %s: released %d bytes: the last %d must be withheld", size, sum.Algo, len(got), min(size, chunkSize))
				}
				if _, err2 := vr.Read(make([]byte, 10)); err2 == nil {
					t.Fatal("a read after the mismatch succeeded")
				}
			}
		}
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.ErrClosedPipe
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

func TestVerifyingReaderPassesReadErrorsAndWithholds(t *testing.T) {
	vr := newVerifyingReader(&failingReader{n: 3 * chunkSize}, checksum{Algo: "xxh64", Want: "0000000000000000"}, nil)
	got, err := io.ReadAll(vr)
	if !errors.Is(err, io.ErrClosedPipe) || vr.verified || len(got) > 2*chunkSize {
		t.Fatalf("read %d bytes, err %v, verified %v", len(got), err, vr.verified)
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
	c := newCache(t)
	key := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	e, err := c.Publish(t.Context(), key, Meta{ImageID: "sha256:x"}, 0, func(w io.Writer, _ *Meta) error {
		_, err := w.Write(make([]byte, 12345))
		return err
	}, nil)
	if err != nil || e.Size != 12345 {
		t.Fatalf("size %d, %v", e.Size, err)
	}
	if sums := sums(make([]byte, 12345)); e.SHA256 != sums[0].Want || e.XXH64 != sums[1].Want {
		t.Fatalf("recorded sha256 %s, xxh64 %s; want %v", e.SHA256, e.XXH64, sums)
	}
	if got, err := c.Lookup(key); err != nil || got.SHA256 != e.SHA256 || got.XXH64 != e.XXH64 || got.Size != 12345 || got.loadSum().Algo != "xxh64" {
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
		if !bytes.Equal(out.Bytes(), data) || hw.Sum() != hex.EncodeToString(sum[:]) || hw.XXH64() != sums(data)[1].Want {
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

// newCache is an empty cache in a test's temp folder.
func newCache(t *testing.T) *Cache {
	t.Helper()
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func publishBytes(t *testing.T, c *Cache, key string, data []byte) {
	t.Helper()
	_, err := c.Publish(context.Background(), key, Meta{ImageID: "sha256:x"}, 0, func(w io.Writer, m *Meta) error {
		_, err := w.Write(data)
		return err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

// A republish while a reader holds the old tar is not corruption: nothing is quarantined.
func TestRepublishIsNotCorruption(t *testing.T) {
	c := newCache(t)
	key := strings.Repeat("ab", 32)
	f := republishedWhileOpen(t, c, key)
	// The reader hashed the old tar; against the new checksum it would mismatch.
	err := c.mismatch(key, f, sums([]byte("old tar"))[1], "1111")
	var re *ReplacedError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *ReplacedError", err)
	}
	if _, err := c.Verify(key, nil); err != nil {
		t.Fatalf("the new entry: %v", err)
	}
}

// republishedWhileOpen publishes "old tar" under key, opens it as a reader does, and
// publishes "new tar" over it (build --no-cache); the reader's file is returned.
func republishedWhileOpen(t *testing.T, c *Cache, key string) *os.File {
	t.Helper()
	publishBytes(t, c, key, []byte("old tar"))
	_, f, err := c.open(key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	publishBytes(t, c, key, []byte("new tar"))
	return f
}

// An entry without metadata or checksum counts as not cached; verify moves it aside.
func TestIncompleteEntry(t *testing.T) {
	c := newCache(t)
	key := strings.Repeat("cd", 32)
	publishBytes(t, c, key, []byte("tar"))
	os.Remove(c.metaPath(key))
	_, err := c.Lookup(key)
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
	c := newCache(t)
	good, bad := strings.Repeat("01", 32), strings.Repeat("ef", 32)
	publishBytes(t, c, good, []byte("a"))
	publishBytes(t, c, bad, []byte("b"))
	os.Remove(c.sumPath(bad))
	res, err := c.Prune(PruneOptions{})
	pruned := res.Removed
	if err != nil || len(pruned) != 1 || pruned[0].Key != bad {
		t.Fatalf("%+v %v", pruned, err)
	}
	if _, err := c.Lookup(good); err != nil {
		t.Fatalf("the complete entry: %v", err)
	}
}

// Entries published before XXH64 was recorded are loaded by their sha256; a malformed
// XXH64 makes the entry incomplete; verify checks the XXH64 too.
func TestLoadChecksumOfOlderAndDamagedMetadata(t *testing.T) {
	c := newCache(t)
	key := strings.Repeat("5a", 32)
	data := []byte("a tar's bytes")
	publishBytes(t, c, key, data)
	setXXH64 := func(v string) {
		t.Helper()
		raw, err := os.ReadFile(c.metaPath(key))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if v == "" {
			delete(m, "xxh64")
		} else {
			m["xxh64"] = v
		}
		raw, _ = json.Marshal(m)
		if err := os.WriteFile(c.metaPath(key), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	setXXH64("")
	e, err := c.Lookup(key)
	if err != nil || e.loadSum() != sums(data)[0] {
		t.Fatalf("an entry without xxh64: %+v %v", e, err)
	}

	setXXH64("not-hex")
	if _, err := c.Lookup(key); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "xxh64") {
		t.Fatalf("a malformed xxh64: %v", err)
	}

	setXXH64("0123456789abcdef") // well-formed, wrong
	_, err = c.Verify(key, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Algo != "xxh64" || ce.Got != sums(data)[1].Want || !strings.Contains(err.Error(), "metadata's xxh64") {
		t.Fatalf("verify with a wrong xxh64: %v", err)
	}
	if _, err := c.Lookup(key); !errors.Is(err, ErrNotCached) {
		t.Fatalf("the corrupt entry is still in place: %v", err)
	}
}

// BenchmarkChecksum compares the two checksums a cache entry records (docs/PERFORMANCE.md).
func BenchmarkChecksum(b *testing.B) {
	buf := make([]byte, 1<<20)
	rand.New(rand.NewSource(1)).Read(buf)
	for _, algo := range []string{"sha256", "xxh64"} {
		b.Run(algo, func(b *testing.B) {
			h := checksum{Algo: algo}.hash()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				h.Write(buf)
			}
		})
	}
}

// A republish between mismatch's check and quarantine's move: the new tar is moved back,
// and the new entry stays whole.
func TestQuarantineLeavesARepublishedEntry(t *testing.T) {
	c := newCache(t)
	key := strings.Repeat("9c", 32)
	f := republishedWhileOpen(t, c, key)
	err := c.quarantine(key, f, sums([]byte("old tar"))[1], "1111")
	var re *ReplacedError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *ReplacedError", err)
	}
	if _, err := c.Verify(key, nil); err != nil {
		t.Fatalf("the new entry: %v", err)
	}
	// Moved aside by someone else already: not this reader's to report.
	os.Remove(c.tarPath(key))
	if err := c.quarantine(key, f, sums([]byte("old tar"))[1], "1111"); !errors.As(err, &re) {
		t.Fatalf("tar gone: got %v", err)
	}
}

// An entry whose metadata cannot be read right now (here: it is a folder, standing in for
// EIO or ESTALE) is not judged incomplete: List fails, and Prune removes nothing.
func TestUnreadableMetadataIsNotIncomplete(t *testing.T) {
	c := newCache(t)
	key := strings.Repeat("3d", 32)
	publishBytes(t, c, key, []byte("tar"))
	os.Remove(c.metaPath(key))
	os.Mkdir(c.metaPath(key), 0o755)
	var inc *IncompleteError
	if _, err := c.Lookup(key); err == nil || errors.As(err, &inc) {
		t.Fatalf("lookup: %v", err)
	}
	if _, err := c.Prune(PruneOptions{Limit: true}); err == nil {
		t.Fatal("prune went on over an entry it could not read")
	}
	if _, err := os.Stat(c.tarPath(key)); err != nil {
		t.Fatalf("the tar was removed: %v", err)
	}
}

// A corrupt entry moved aside counts its age from then, not from when it was built.
func TestQuarantinedEntryAgeStartsWhenMovedAside(t *testing.T) {
	c := newCache(t)
	key := strings.Repeat("4e", 32)
	publishBytes(t, c, key, []byte("tar bytes"))
	os.WriteFile(c.tarPath(key), []byte("tar bytez"), 0o644)
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(c.tarPath(key), old, old)
	var ce *CorruptError
	if _, err := c.Verify(key, nil); !errors.As(err, &ce) {
		t.Fatalf("verify: %v", err)
	}
	res, err := c.Prune(PruneOptions{Limit: true, OlderThan: time.Hour})
	pruned := res.Removed
	if err != nil || len(pruned) != 0 {
		t.Fatalf("pruned %+v (%v): the entry was moved aside just now", pruned, err)
	}
}

// A file where the cache's folder should be is named.
func TestOpenCacheOverAFile(t *testing.T) {
	shared := t.TempDir()
	os.WriteFile(CacheLayout{Shared: shared}.parent(), nil, 0o644)
	_, err := OpenCache(shared)
	var sd *SharedDirError
	if !errors.As(err, &sd) || !strings.Contains(err.Error(), CacheLayout{Shared: shared}.parent()+" and ") || strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("%v", err)
	}
}

// A FIFO in the shared cache in place of an entry's metadata, checksum or tar blocked every
// node that looked the key up: it is refused at once.
func TestFIFOsInTheCacheDoNotBlock(t *testing.T) {
	for _, which := range []string{"meta", "sum", "tar"} {
		t.Run(which, func(t *testing.T) {
			c := newCache(t)
			key := strings.Repeat("ef", 32)
			publishBytes(t, c, key, []byte("tar"))
			p := map[string]string{"meta": c.metaPath(key), "sum": c.sumPath(key), "tar": c.tarPath(key)}[which]
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() { _, _, err := c.open(key); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a FIFO was taken for a cache file")
				}
			case <-time.After(time.Minute): // does not hang: blocked, it would wait forever
				t.Fatal("blocked on a FIFO in the cache")
			}
		})
	}
}

package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/progress"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
)

// Cache is the content-addressed image tar cache on the shared filesystem:
//
//	<dir>/<key>.tar          docker-archive of the image
//	<dir>/<key>.tar.sha256   its checksum
//	<dir>/<key>.json         metadata (Meta), which also records the tar's XXH64
//
// An entry is published by writing the checksum and metadata first and renaming the tar
// into place last, each through a temp file in the same folder, fsynced. Readers open only
// final names, so a tar under its final name always belongs to a complete entry.
type Cache struct {
	Dir string
}

// Meta describes a cache entry.
type Meta struct {
	Version int      `json:"version"`
	Key     string   `json:"key"`
	ImageID string   `json:"imageId"`
	Tags    []string `json:"tags"`
	Size    int64    `json:"size"`
	SHA256  string   `json:"sha256"`
	// XXH64 of the tar (hex): what a load verifies. It is an order of magnitude cheaper to
	// compute than sha256 and detects the same accidental damage; the engine itself checks
	// every layer against the image config's sha256 diff ids, and Ensure confirms the
	// image id. Entries written before it existed are verified by their sha256.
	XXH64    string    `json:"xxh64,omitempty"`
	Builder  string    `json:"builder"`
	Manifest string    `json:"manifest,omitempty"`
	Created  time.Time `json:"created"`
	Benchctl string    `json:"benchctl,omitempty"`
}

// Entry is a published cache entry.
type Entry struct {
	Meta
	Tar string `json:"tar"`
}

var keyRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ErrNotCached is returned when the cache has no entry for a key.
var ErrNotCached = errors.New("not cached")

// CorruptError is a cache entry whose tar does not match its checksum. The entry has been
// moved aside (unless NotMoved says why not) and is never loaded.
type CorruptError struct {
	Key     string
	Algo    string // the checksum that did not match: "sha256" or "xxh64"
	Want    string
	Got     string
	MovedTo string
	// NotMoved says why the entry could not be moved aside (MovedTo is then empty): it
	// stays where it is, and every load refuses it again.
	NotMoved string
}

func (e *CorruptError) Error() string {
	if e.MovedTo == "" {
		return fmt.Sprintf("cache entry %s is corrupt: %s %s, expected %s (it could not be moved aside: %s; rebuild it with --no-cache)",
			ShortKey(e.Key), e.Algo, short(e.Got), short(e.Want), e.NotMoved)
	}
	return fmt.Sprintf("cache entry %s is corrupt: %s %s, expected %s (moved aside to %s; it will be rebuilt)",
		ShortKey(e.Key), e.Algo, short(e.Got), short(e.Want), e.MovedTo)
}

// loadSum is the checksum a load verifies: the XXH64 when the entry records one.
func (m *Meta) loadSum() checksum {
	if m.XXH64 != "" {
		return checksum{Algo: "xxh64", Want: m.XXH64}
	}
	return checksum{Algo: "sha256", Want: m.SHA256}
}

// sum is the entry's recorded value of the named checksum.
func (m *Meta) sum(algo string) string {
	if algo == "xxh64" {
		return m.XXH64
	}
	return m.SHA256
}

func short(s string) string { return s[:min(len(s), 16)] }

// CacheIn is the cache under a shared directory, for reading and maintenance: nothing is
// created. The shared directory must exist; its cache folder need not (an empty cache).
func CacheIn(sharedDir string) (*Cache, error) {
	if sharedDir == "" {
		return nil, errors.New("no shared directory: give --shared-dir or set BENCHCTL_SHARED_DIR")
	}
	st, err := os.Stat(sharedDir)
	if err != nil || !st.IsDir() {
		return nil, &SharedDirError{Dir: sharedDir}
	}
	return CacheLayout{Shared: sharedDir}.Cache(), nil
}

// SharedDirError is a shared directory that does not exist or is not a folder: bad input.
type SharedDirError struct {
	Dir    string
	Detail string // what is wrong below it, when the folder itself is fine
}

func (e *SharedDirError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("the shared directory %s cannot hold the image cache: %s", e.Dir, e.Detail)
	}
	return fmt.Sprintf("the shared directory %s does not exist or is not a folder (give --shared-dir or BENCHCTL_SHARED_DIR as used by build and run)", e.Dir)
}

// InvalidInput marks the error as bad input.
func (e *SharedDirError) InvalidInput() bool { return true }

// OpenCache opens (creating it if needed) the cache under a shared directory.
func OpenCache(sharedDir string) (*Cache, error) {
	if sharedDir == "" {
		return nil, errors.New("no shared directory: give --shared-dir or set BENCHCTL_SHARED_DIR")
	}
	layout := CacheLayout{Shared: sharedDir}
	dir := layout.Dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		if st, serr := os.Stat(sharedDir); serr == nil && !st.IsDir() {
			return nil, &SharedDirError{Dir: sharedDir}
		}
		if errors.Is(err, syscall.ENOTDIR) { // a file where cache/ or cache/images/ should be
			return nil, &SharedDirError{Dir: sharedDir, Detail: fmt.Sprintf("%v: %s and %s must be folders", err, layout.parent(), dir)}
		}
		return nil, fmt.Errorf("creating the image cache: %w", err)
	}
	return &Cache{Dir: dir}, nil
}

func (c *Cache) tarPath(key string) string  { return filepath.Join(c.Dir, tarName(key)) }
func (c *Cache) sumPath(key string) string  { return filepath.Join(c.Dir, sumName(key)) }
func (c *Cache) metaPath(key string) string { return filepath.Join(c.Dir, metaName(key)) }

func checkKey(key string) error {
	if !keyRE.MatchString(key) {
		return fmt.Errorf("%q is not an image key (64 lower-case hex digits)", key)
	}
	return nil
}

var (
	sha256RE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	xxh64RE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{16}$`) })
)

// IncompleteError is an entry whose tar exists without valid metadata or checksum (a
// publisher was killed between files, or someone removed one). It is as good as not
// cached: errors.Is(err, ErrNotCached) holds, so callers rebuild over it, and verify and
// prune remove it.
type IncompleteError struct {
	Key  string
	What string
	Err  error
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("cache entry %s is incomplete (%s: %v); it is rebuilt over, or removed by 'benchctl cache prune'", ShortKey(e.Key), e.What, e.Err)
}

// Is makes an incomplete entry count as not cached.
func (e *IncompleteError) Is(target error) bool { return target == ErrNotCached }

// Lookup returns the complete entry for key, or ErrNotCached.
func (c *Cache) Lookup(key string) (*Entry, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	st, err := os.Lstat(c.tarPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotCached
	} else if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		nr := &safefile.NotRegularError{Path: c.tarPath(key), What: safefile.Describe(st.Mode()), Hint: plantedHint}
		if st.IsDir() {
			return nil, fmt.Errorf("reading cache entry %s: %w", ShortKey(key), nr)
		}
		return nil, &IncompleteError{Key: key, What: "the tar is not a regular file", Err: nr}
	}
	var m Meta
	data, err := safefile.ReadFileNoFollow(c.metaPath(key), maxMetaSize)
	if planted(c.metaPath(key), err) {
		return nil, &IncompleteError{Key: key, What: "no valid metadata", Err: plantedError(err)}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading cache entry %s: %w", ShortKey(key), err) // EIO, ESTALE: not a verdict on the entry
	}
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err == nil && m.XXH64 != "" && !xxh64RE().MatchString(m.XXH64) {
		err = fmt.Errorf("xxh64 %q is not 16 hex digits", m.XXH64)
	}
	if err != nil || m.Key != key || m.ImageID == "" {
		if err == nil {
			err = errors.New("key or image id missing")
		}
		return nil, &IncompleteError{Key: key, What: "no valid metadata", Err: err}
	}
	if m.SHA256, err = c.readSum(key); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading cache entry %s: %w", ShortKey(key), err)
		}
		return nil, &IncompleteError{Key: key, What: "no valid checksum", Err: plantedError(err)}
	}
	if st.Size() != m.Size {
		m.Size = st.Size() // the checksum will tell whether it is intact
	}
	return &Entry{Meta: m, Tar: c.tarPath(key)}, nil
}

// maxMetaSize bounds the metadata and checksum files read from the shared cache.
const maxMetaSize = 1 << 20

// plantedHint is what a reader is told about a link, FIFO, socket or device in the cache.
const plantedHint = "a publisher writes only regular files, so this one was put there by hand or by someone else, and is never followed or read; 'benchctl cache verify' moves it aside"

// planted reports whether err says that a cache file is a link, FIFO, socket or device:
// never something a publisher writes, so the entry is incomplete. A folder is not judged:
// it stands for a file that cannot be read now (as EIO or ESTALE do).
func planted(path string, err error) bool {
	var nr *safefile.NotRegularError
	if !errors.As(err, &nr) {
		return false
	}
	st, lerr := os.Lstat(path)
	return lerr != nil || !st.IsDir()
}

// plantedError is err (a *safefile.NotRegularError) with the cache's hint.
func plantedError(err error) error {
	var nr *safefile.NotRegularError
	if errors.As(err, &nr) {
		return &safefile.NotRegularError{Path: nr.Path, What: nr.What, Hint: plantedHint}
	}
	return err
}

// readSum reads the sha256 from an entry's checksum file ("<hex>  <key>.tar").
func (c *Cache) readSum(key string) (string, error) {
	data, err := safefile.ReadFileNoFollow(c.sumPath(key), maxMetaSize)
	if err != nil {
		return "", err
	}
	if f := strings.Fields(string(data)); len(f) > 0 && sha256RE().MatchString(f[0]) {
		return f[0], nil
	}
	return "", fmt.Errorf("%s holds no sha256", c.sumPath(key))
}

// open opens an entry's tar together with the checksum that belongs to it: the tar is
// opened first, the checksum read after, and the path must still name the opened file.
// A concurrent republish of the key (build --no-cache) removes the old tar before it
// writes the new checksum, so a reader can never pair one tar with another's checksum; it
// sees the change and reads again.
func (c *Cache) open(key string) (*Entry, *os.File, error) {
	for attempt := 1; ; attempt++ {
		// A link is never followed, and a FIFO is refused without blocking: the tar must be a
		// regular file, checked on the descriptor that is read.
		f, err := safefile.OpenNoFollow(c.tarPath(key))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, ErrNotCached
		}
		if planted(c.tarPath(key), err) {
			return nil, nil, &IncompleteError{Key: key, What: "the tar is not a regular file", Err: plantedError(err)}
		}
		if err != nil {
			return nil, nil, err
		}
		e, err := c.Lookup(key)
		if c.sameTar(key, f) {
			if err != nil {
				f.Close()
				return nil, nil, err
			}
			return e, f, nil
		}
		f.Close()
		if attempt == 5 {
			return nil, nil, fmt.Errorf("cache entry %s kept changing while it was read (is it being rebuilt?); try again", ShortKey(key))
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
}

// sameTar reports whether the entry's tar path still names the open file f.
func (c *Cache) sameTar(key string, f *os.File) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(c.tarPath(key))
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// ReplacedError: the entry was replaced by a concurrent publish while it was read, so a
// checksum mismatch says nothing about corruption. Retrying reads the new entry.
type ReplacedError struct{ Key string }

func (e *ReplacedError) Error() string {
	return fmt.Sprintf("cache entry %s was replaced while it was read (a concurrent build --no-cache?); run again", ShortKey(e.Key))
}

// mismatch handles a tar (open as f) whose content did not match sum: quarantined when
// the entry is unchanged, a *ReplacedError when someone republished it meanwhile.
func (c *Cache) mismatch(key string, f *os.File, sum checksum, got string) error {
	e, err := c.Lookup(key)
	if !c.sameTar(key, f) || err != nil || e.sum(sum.Algo) != sum.Want {
		return &ReplacedError{Key: key}
	}
	return c.quarantine(key, f, sum, got)
}

// Publish writes an entry: write streams the tar and may complete the metadata (a builder
// learns the image id while it exports). The entry appears only when complete. meta.SHA256
// and meta.Size are filled in from what was written. expected is the tar's size when it is
// known or can be estimated, else 0 (progress shows a total and an ETA when it is set).
func (c *Cache) Publish(ctx context.Context, key string, meta Meta, expected int64, write func(io.Writer, *Meta) error, onProgress ProgressFunc) (*Entry, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(c.Dir, "."+key+".tar.tmp-")
	if err != nil {
		return nil, fmt.Errorf("creating a temp file in the cache: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	cnt := progress.NewCounter(onProgress, "save", expected)
	hw := newHashingWriter(tmp)
	werr := write(progress.Writer{W: hw, C: cnt}, &meta)
	if err := hw.Close(); err != nil && werr == nil {
		werr = fmt.Errorf("writing to the cache: %w", err)
	}
	if werr != nil {
		return nil, werr
	}
	if meta.ImageID == "" {
		return nil, errors.New("the builder reported no image id; nothing was published")
	}
	cnt.Finish()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := tmp.Chmod(0o644); err != nil { // every node's user reads it
		return nil, err
	}
	if onProgress != nil && cnt.Done() >= 256<<20 { // seconds on a network filesystem
		onProgress(Progress{Phase: "wait", Step: fmt.Sprintf("flushing the %s tar to the shared filesystem", manifest.FormatBytes(cnt.Done()))})
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("syncing the cache tar: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	meta.Version, meta.Key = 1, key
	meta.SHA256, meta.XXH64 = hw.Sum(), hw.XXH64()
	meta.Size = cnt.Done()
	if meta.Created.IsZero() {
		meta.Created = time.Now().UTC()
	}
	// A republished key (build --no-cache): the old tar goes first, so that no reader pairs
	// it with the new checksum (readers that have it open keep reading it, and see the change).
	if err := os.Remove(c.tarPath(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("replacing the cache entry: %w", err)
	}
	// A link or FIFO someone put in place of the checksum or metadata goes too (atomic
	// writes refuse to replace a link): it is removed, never written through.
	for _, p := range []string{c.sumPath(key), c.metaPath(key)} {
		if st, err := os.Lstat(p); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
			if err := os.Remove(p); err != nil {
				return nil, fmt.Errorf("replacing the cache entry: %w", err)
			}
		}
	}
	// 0644 like the tar: every node's user reads the entry, whatever the publisher's umask.
	if err := atomicfile.WriteFileMode(c.sumPath(key), []byte(meta.SHA256+"  "+key+".tar\n"), 0o644); err != nil {
		return nil, err
	}
	mj, _ := json.MarshalIndent(meta, "", "  ")
	if err := atomicfile.WriteFileMode(c.metaPath(key), append(mj, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), c.tarPath(key)); err != nil {
		return nil, fmt.Errorf("publishing the cache tar: %w", err)
	}
	committed = true
	if err := atomicfile.SyncDir(c.Dir); err != nil {
		return nil, err
	}
	return &Entry{Meta: meta, Tar: c.tarPath(key)}, nil
}

// Verify re-reads an entry's tar and compares it with its checksums (sha256, and the
// XXH64 loads verify). A mismatch moves the entry aside and returns a *CorruptError.
func (c *Cache) Verify(key string, progress ProgressFunc) (*Entry, error) {
	return c.VerifyContext(context.Background(), key, progress)
}

// VerifyContext is Verify that stops reading when ctx ends (checked every MiB hashed),
// returning its cause; the entry is then left as it is.
func (c *Cache) VerifyContext(ctx context.Context, key string, onProgress ProgressFunc) (*Entry, error) {
	e, f, err := c.open(key)
	var inc *IncompleteError
	if errors.As(err, &inc) {
		return nil, c.quarantineIncomplete(key, inc)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, x := sha256.New(), xxhash.New()
	cnt := progress.NewCounter(onProgress, "verify", e.Size)
	if _, err := io.CopyBuffer(progress.Writer{W: io.MultiWriter(h, x), C: cnt}, ctxReader{ctx, f}, make([]byte, 1<<20)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", e.Tar, err)
	}
	cnt.Finish()
	if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
		return nil, c.mismatch(key, f, checksum{Algo: "sha256", Want: e.SHA256}, got)
	}
	if got := hex.EncodeToString(x.Sum(nil)); e.XXH64 != "" && got != e.XXH64 {
		err := c.mismatch(key, f, checksum{Algo: "xxh64", Want: e.XXH64}, got)
		var ce *CorruptError
		if errors.As(err, &ce) { // loads check the xxh64, so the entry is unusable all the same
			return nil, fmt.Errorf("%w; the tar matches its sha256, so it is the metadata's xxh64 that is damaged", err)
		}
		return nil, err
	}
	return e, nil
}

// List returns every complete entry, newest first.
func (c *Cache) List() ([]Entry, error) {
	ents, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing was ever published here
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, d := range ents {
		key, ok := strings.CutSuffix(d.Name(), tarSuffix)
		if !ok || !keyRE.MatchString(key) {
			continue
		}
		e, err := c.Lookup(key)
		var inc *IncompleteError
		switch {
		case errors.As(err, &inc):
			out = append(out, Entry{Meta: Meta{Key: key}, Tar: c.tarPath(key)}) // no ImageID: incomplete
		case errors.Is(err, ErrNotCached):
			// removed since the folder was read
		case err != nil:
			return nil, err // unreadable now (EIO, ESTALE): nothing is judged, or pruned, on that
		default:
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Resolve finds the full key for a unique prefix (at least 4 hex digits).
func (c *Cache) Resolve(prefix string) (string, error) {
	prefix = strings.ToLower(prefix) // keys are lower-case hex; a pasted upper-case one is the same key
	if keyRE.MatchString(prefix) {
		if _, err := os.Lstat(c.tarPath(prefix)); err != nil {
			return "", fmt.Errorf("no cache entry with key %s in %s", short(prefix), c.Dir)
		}
		return prefix, nil
	}
	if len(prefix) < 4 || strings.Trim(prefix, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not an image key or key prefix (at least 4 hex digits)", prefix)
	}
	entries, err := c.List()
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range entries {
		if strings.HasPrefix(e.Key, prefix) {
			found = append(found, e.Key)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no cache entry with key %s… in %s", prefix, c.Dir)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("key prefix %s is ambiguous (%d entries); give more digits", prefix, len(found))
}

// Remove deletes an entry: tar first, so that it stops being visible at once.
func (c *Cache) Remove(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := os.Remove(c.tarPath(key))
	os.Remove(c.sumPath(key))
	os.Remove(c.metaPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Lock takes the build lock of a key; waiting is called once if another builder holds it.
func (c *Cache) Lock(ctx context.Context, key string, waiting func()) (Lock, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return lockKey(ctx, filepath.Join(c.Dir, lockName(key)), waiting)
}

// ctxReader reads r until ctx ends: then its cause is the error of the next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

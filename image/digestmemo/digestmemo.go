// Package digestmemo keeps the SHA-256 of the files of images' build contexts between a
// user's runs (package image's KeyUsing), for the files that have not changed since.
package digestmemo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
)

// A warm run computes its image's key again (image.KeyUsing): every file of the build context is
// read and hashed, 2.7 MB in 3-5 ms for the dummy example, seconds for a model's context of
// gigabytes. Memo keeps each file's SHA-256 with what fstat says of the file it was
// read from (device, inode, size, modification and change times to the nanosecond), and
// gives it back only for a file whose fstat says all the same: a file written since has
// another change time (the kernel sets it on every write, and no user can set it back).
// A digest is kept only for a file unchanged for digestSettle before it was read, so that a
// write in the same tick of the file system's clock as the read cannot go unseen (the
// "racy" case of git's index, which works the same way).
const (
	digestSettle     = 2 * time.Second
	maxDigestEntries = 20000
	maxDigestMemo    = 8 << 20 // bytes of the memo file
	digestMemoFormat = "benchctl-context-digests/v1"
)

// Memo is the files' digests a user's runs keep between them (OpenDigestMemo).
type Memo struct {
	// Now is the clock a file's settling is judged by (nil: time.Now). Tests move it on
	// rather than wait for the file system's clock.
	Now func() time.Time

	path    string
	mu      sync.Mutex
	entries map[string]digestEntry
	dirty   bool
}

type digestEntry struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Size   int64  `json:"size"`
	MTime  int64  `json:"mtime"` // ns
	CTime  int64  `json:"ctime"` // ns
	SHA256 string `json:"sha256"`
	At     int64  `json:"at"` // when it was read (ns): the oldest go first past maxDigestEntries
}

type digestFile struct {
	Format  string                 `json:"format"`
	Entries map[string]digestEntry `json:"entries"`
}

// Default is the memo in the user's cache folder ($XDG_CACHE_HOME/benchctl, else
// ~/.cache/benchctl): "" where there is none.
func Default() string {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return filepath.Join(dir, "benchctl", "context-digests.json")
}

// Open reads the memo at path ("" or a file that cannot be trusted: an empty memo
// that is never saved). Never an error: a memo is only a shortcut. It is trusted only as a
// regular file of this user's, in a folder of this user's, neither writable by others:
// another user who could write it could make a run take a stale image for the current one.
func Open(path string) *Memo {
	m := &Memo{entries: map[string]digestEntry{}}
	if path == "" {
		return m
	}
	if _, err := os.Lstat(filepath.Dir(path)); errors.Is(err, os.ErrNotExist) {
		m.path = path // Save makes the folder, this user's alone
		return m
	}
	if !ownedAlone(filepath.Dir(path), true) {
		return m
	}
	m.path = path
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return m
	}
	if !ownedAlone(path, false) {
		m.path = ""
		return m
	}
	data, err := safefile.ReadFileNoFollow(path, maxDigestMemo)
	if err != nil {
		return m
	}
	var f digestFile
	if json.Unmarshal(data, &f) != nil || f.Format != digestMemoFormat {
		return m // another format, or a torn file: started again
	}
	for p, e := range f.Entries {
		if filepath.IsAbs(p) && len(e.SHA256) == 64 && e.Size >= 0 {
			m.entries[p] = e
		}
	}
	return m
}

// ownedAlone says whether path (a folder when dir) is this user's and writable by no one
// else; a link is not followed.
func ownedAlone(path string, dir bool) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	if dir {
		return fi.IsDir()
	}
	return fi.Mode().IsRegular()
}

// Digest is the SHA-256 of the open file f at path: the memo's where fstat says the file is
// the one it read, else compute's (kept when the file has settled). A nil memo computes.
func (m *Memo) Digest(path string, f *os.File, compute func() (string, error)) (string, error) {
	if m == nil {
		return compute()
	}
	fi, err := f.Stat()
	if err != nil {
		return compute()
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return compute()
	}
	now := time.Now()
	if m.Now != nil {
		now = m.Now()
	}
	cur := digestEntry{Dev: uint64(st.Dev), Ino: st.Ino, Size: fi.Size(), MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
	m.mu.Lock()
	e, hit := m.entries[path]
	m.mu.Unlock()
	if hit && e.Dev == cur.Dev && e.Ino == cur.Ino && e.Size == cur.Size && e.MTime == cur.MTime && e.CTime == cur.CTime {
		return e.SHA256, nil
	}
	sum, err := compute()
	if err != nil {
		return "", err
	}
	if now.Sub(time.Unix(0, max(cur.MTime, cur.CTime))) >= digestSettle {
		cur.SHA256, cur.At = sum, now.UnixNano()
		m.mu.Lock()
		m.entries[path], m.dirty = cur, true
		m.mu.Unlock()
	}
	return sum, nil
}

// Save writes the memo back when it learnt a digest (atomically; at most maxDigestEntries,
// the most recently read), creating its folder (0700).
func (m *Memo) Save() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty || m.path == "" {
		return nil
	}
	if len(m.entries) > maxDigestEntries {
		paths := make([]string, 0, len(m.entries))
		for p := range m.entries {
			paths = append(paths, p)
		}
		slices.SortFunc(paths, func(a, b string) int { return int(min(max(m.entries[b].At-m.entries[a].At, -1), 1)) })
		for _, p := range paths[maxDigestEntries:] {
			delete(m.entries, p)
		}
	}
	data, err := json.Marshal(digestFile{Format: digestMemoFormat, Entries: m.entries})
	if err != nil {
		return err
	}
	if len(data) > maxDigestMemo {
		return fmt.Errorf("the context digests memo would be %d bytes, over %d: not saved", len(data), maxDigestMemo)
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil {
		return err
	}
	if err := atomicfile.WriteFileMode(m.path, data, 0o600); err != nil {
		return err
	}
	m.dirty = false
	return nil
}

//go:build linux

package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A co-writer of the shared directory plants links and FIFOs in the cache. None of them is
// followed, opened as a tar, or made to hang a reader; prune removes only what quarantine
// wrote, only in a quarantine folder that is a folder of the user running it.

// victimDir is a folder outside the cache holding files a prune must never touch, some of
// them named like quarantined entries.
func victimDir(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	names := []string{"notes.txt", strings.Repeat("ab", 32) + ".20240101T000000.tar", strings.Repeat("ab", 32) + ".20240101T000000.json", ".ssh"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("precious"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, names
}

func checkIntact(t *testing.T, dir string, names []string) {
	t.Helper()
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != "precious" {
			t.Errorf("%s outside the cache was touched: %q, %v", n, b, err)
		}
	}
}

func skippedHas(res PruneResult, path, reason string) bool {
	for _, s := range res.Skipped {
		if s.Path == path && strings.Contains(s.Reason, reason) {
			return true
		}
	}
	return false
}

// Defect: cache/images/corrupt -> any folder made 'cache prune' (no flags) delete every
// file in it.
func TestPruneNeverFollowsALinkedQuarantine(t *testing.T) {
	c := newCache(t)
	victim, names := victimDir(t)
	q := c.quarantinePath()
	if err := os.Symlink(victim, q); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		res, err := c.Prune(PruneOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Removed) != 0 {
			t.Errorf("dry %v: pruned %+v through a link", dry, res.Removed)
		}
		if !skippedHas(res, q, "symbolic link") {
			t.Errorf("dry %v: the linked quarantine is not reported as skipped: %+v", dry, res.Skipped)
		}
	}
	checkIntact(t, victim, names)
	// Nor does a verify move anything there.
	key := strings.Repeat("4e", 32)
	publishBytes(t, c, key, []byte("tar bytes"))
	os.WriteFile(c.tarPath(key), []byte("tar bytez"), 0o644)
	_, err := c.Verify(key, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "could not be moved aside") || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("verify with a linked quarantine: %v", err)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != len(names) {
		t.Errorf("verify moved files through the link: %v", ents)
	}
}

// In a real quarantine folder prune removes what quarantine writes and nothing else, and
// never follows a link that stands there; it says what it left and why.
func TestPruneRemovesOnlyQuarantinedNames(t *testing.T) {
	c := newCache(t)
	victim, names := victimDir(t)
	key := strings.Repeat("4e", 32)
	publishBytes(t, c, key, []byte("tar bytes"))
	os.WriteFile(c.tarPath(key), []byte("tar bytez"), 0o644)
	var ce *CorruptError
	if _, err := c.Verify(key, nil); !errors.As(err, &ce) {
		t.Fatalf("verify: %v", err)
	}
	q := c.quarantinePath()
	moved, _ := os.ReadDir(q)
	if len(moved) != 3 {
		t.Fatalf("quarantined %v, want tar, checksum and metadata", moved)
	}
	other := strings.Repeat("5f", 32) + ".20240101T000000"
	linked := filepath.Join(q, other+".tar")
	os.Symlink(filepath.Join(victim, names[1]), linked) // named like an entry: the link goes, not its target
	os.WriteFile(filepath.Join(q, "README"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(q, other+".json"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(q, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := c.Prune(PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, p := range res.Removed {
		removed = append(removed, filepath.Base(p.Path))
	}
	slices.Sort(removed)
	want := []string{moved[0].Name(), moved[1].Name(), moved[2].Name(), other + ".tar"}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, n := range []string{"README", "pipe"} {
		if !skippedHas(res, filepath.Join(q, n), "not named like") {
			t.Errorf("%s not reported as skipped: %+v", n, res.Skipped)
		}
	}
	if !skippedHas(res, filepath.Join(q, other+".json"), "folder") {
		t.Errorf("a folder not reported as skipped: %+v", res.Skipped)
	}
	left, _ := os.ReadDir(q)
	if len(left) != 3 {
		t.Errorf("left %v, want README, pipe and the folder", left)
	}
	checkIntact(t, victim, names)
}

// A quarantine folder of another user is not pruned by this one (root prunes only its
// own: a folder a user owns is the user's to empty).
func TestPruneSkipsAQuarantineOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	c := newCache(t)
	q := c.quarantinePath()
	os.Mkdir(q, 0o755)
	entry := filepath.Join(q, strings.Repeat("4e", 32)+".20240101T000000.tar")
	os.WriteFile(entry, []byte("x"), 0o644)
	if err := os.Chown(q, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	res, err := c.Prune(PruneOptions{})
	if err != nil || len(res.Removed) != 0 || !skippedHas(res, q, "owned by uid 65534") {
		t.Fatalf("prune: %+v %v", res, err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatal("the other user's entry was removed")
	}
}

// Defect: <key>.tar -> /etc/shadow with a fake checksum made 'cache verify' (as root) print
// a hash of /etc/shadow. A link is never opened as a tar: not by verify, lookup, list,
// load or resolve; verify moves the link itself aside.
func TestALinkedTarIsNeverRead(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("root:$6$secret-hash:19000::::::\n"), 0o600)
	s := sha256.Sum256([]byte("root:$6$secret-hash:19000::::::\n"))
	secretSum := hex.EncodeToString(s[:])
	for _, sum := range []string{strings.Repeat("0", 64), secretSum} { // a fake one, and a guess that is right
		c := newCache(t)
		key := strings.Repeat("7a", 32)
		publishBytes(t, c, key, []byte("tar"))
		os.Remove(c.tarPath(key))
		if err := os.Symlink(secret, c.tarPath(key)); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(c.sumPath(key), []byte(sum+"  "+key+".tar\n"), 0o644)
		meta, _ := json.Marshal(Meta{Version: 1, Key: key, ImageID: "sha256:x", SHA256: sum, Size: 31})
		os.WriteFile(c.metaPath(key), meta, 0o644)

		var inc *IncompleteError
		if _, err := c.Lookup(key); !errors.As(err, &inc) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("lookup: %v, want an incomplete entry naming the link", err)
		}
		if _, f, err := c.open(key); err == nil {
			f.Close()
			t.Error("open followed the link")
		}
		if ents, err := c.List(); err != nil || len(ents) != 1 || ents[0].ImageID != "" {
			t.Errorf("list: %+v %v, want one incomplete entry", ents, err)
		}
		if k, err := c.Resolve(key[:8]); err != nil || k != key {
			t.Errorf("resolve: %q %v", k, err)
		}
		_, err := c.Verify(key, nil)
		if err == nil || strings.Contains(err.Error(), secretSum[:16]) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("verify: %v", err)
		}
		if _, err := os.Lstat(c.tarPath(key)); !os.IsNotExist(err) {
			t.Errorf("the link is still in place: %v", err)
		}
		if b, err := os.ReadFile(secret); err != nil || !strings.HasPrefix(string(b), "root:") {
			t.Errorf("the link's target was touched: %q %v", b, err)
		}
	}
}

// Links in place of the checksum or metadata make the entry incomplete (never read
// through); a link in place of a lock file is removed, never opened; a republish replaces
// links without writing through them.
func TestLinkedEntryFilesAreNotFollowed(t *testing.T) {
	for _, which := range []string{"meta", "sum"} {
		t.Run(which, func(t *testing.T) {
			c := newCache(t)
			key := strings.Repeat("8b", 32)
			publishBytes(t, c, key, []byte("tar"))
			p := map[string]string{"meta": c.metaPath(key), "sum": c.sumPath(key)}[which]
			real := filepath.Join(t.TempDir(), "real")
			data, _ := os.ReadFile(p)
			os.WriteFile(real, data, 0o644) // a valid file, but elsewhere
			os.Remove(p)
			os.Symlink(real, p)
			var inc *IncompleteError
			if _, err := c.Lookup(key); !errors.As(err, &inc) || !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("lookup: %v, want an incomplete entry naming the link", err)
			}
			publishBytes(t, c, key, []byte("tar again"))
			if b, _ := os.ReadFile(real); string(b) != string(data) {
				t.Error("the republish wrote through the link")
			}
			if _, err := c.Verify(key, nil); err != nil {
				t.Fatalf("the republished entry: %v", err)
			}
		})
	}
	c := newCache(t)
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("x"), 0o600)
	lock := filepath.Join(c.Dir, "."+strings.Repeat("9c", 32)+".lock")
	os.Symlink(target, lock)
	old := time.Now().Add(-2 * time.Hour)
	ts := []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), unix.NsecToTimespec(old.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, lock, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	res, err := c.Prune(PruneOptions{})
	if err != nil || len(res.Removed) != 1 || res.Removed[0].Path != lock {
		t.Fatalf("prune: %+v %v", res, err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal("the lock link's target was removed")
	}
}

// FIFOs where a lock file or quarantined entry would be do not hang prune.
func TestPruneDoesNotBlockOnFIFOs(t *testing.T) {
	c := newCache(t)
	old := time.Now().Add(-2 * time.Hour)
	os.Mkdir(c.quarantinePath(), 0o755)
	for _, p := range []string{
		filepath.Join(c.Dir, "."+strings.Repeat("9c", 32)+".lock"),
		filepath.Join(c.Dir, "."+strings.Repeat("9d", 32)+".lock.excl"),
		filepath.Join(c.quarantinePath(), strings.Repeat("9e", 32)+".20240101T000000.tar"),
	} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip(err)
		}
		os.Chtimes(p, old, old)
	}
	done := make(chan error, 1)
	var res PruneResult
	go func() {
		var err error
		res, err = c.Prune(PruneOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || len(res.Removed) != 3 {
			t.Fatalf("prune: %+v %v", res, err)
		}
	case <-time.After(time.Minute): // does not hang: blocked, it would wait forever
		t.Fatal("prune blocked on a FIFO")
	}
}

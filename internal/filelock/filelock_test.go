//go:build linux

package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Recorded mountinfo lines: NFS with nolock, NFS with default options, ext4, and an NFS
// mount point with a space (\040).
const mountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:45 / /shared rw,relatime shared:30 - nfs4 fs:/export rw,vers=4.2,rsize=1048576,hard,proto=tcp,local_lock=none,addr=10.0.0.1
41 22 0:46 / /scratch rw,relatime shared:31 - nfs fs:/scratch rw,vers=3,hard,nolock,proto=tcp,addr=10.0.0.2
42 22 0:47 / /mnt/with\040space rw,relatime - nfs4 fs:/x rw,vers=4.1,local_lock=flock
43 40 0:48 / /shared/inner rw,relatime - nfs fs:/inner rw,vers=3,local_lock=all
`

func TestLocalOnly(t *testing.T) {
	defer func(s func(string) (int64, error), m func() ([]byte, error)) { statfsType, readMountinfo = s, m }(statfsType, readMountinfo)
	readMountinfo = func() ([]byte, error) { return []byte(mountinfo), nil }
	for _, c := range []struct {
		dir   string
		nfs   bool
		local bool
		why   string
	}{
		{"/shared/benchctl/jobs", true, false, ""},
		{"/scratch/u/cache/images", true, true, "/scratch is NFS mounted with nolock"},
		{"/mnt/with space/jobs", true, true, "/mnt/with space is NFS mounted with local_lock=flock"},
		{"/shared/inner/x", true, true, "/shared/inner is NFS mounted with local_lock=all"},
		{"/sharedx/y", true, false, ""}, // not under /shared: the root ext4 mount's options
		{"/home/u", false, false, ""},
	} {
		statfsType = func(string) (int64, error) {
			if c.nfs {
				return nfsSuperMagic, nil
			}
			return 0xef53, nil
		}
		local, why := LocalOnly(c.dir)
		if local != c.local || why != c.why {
			t.Errorf("LocalOnly(%s) = %v %q, want %v %q", c.dir, local, why, c.local, c.why)
		}
	}
}

// On a filesystem where flock is local only, Acquire uses the lock file (flock would have
// "succeeded" on every node).
func TestAcquireUsesTheLockFileWhereFlockIsLocal(t *testing.T) {
	defer func(s func(string) (int64, error), m func() ([]byte, error)) { statfsType, readMountinfo = s, m }(statfsType, readMountinfo)
	dir := t.TempDir()
	statfsType = func(string) (int64, error) { return nfsSuperMagic, nil }
	readMountinfo = func() ([]byte, error) {
		return []byte("41 22 0:46 / " + dir + " rw - nfs fs:/x rw,vers=3,nolock\n"), nil
	}
	l, err := Acquire(context.Background(), filepath.Join(dir, "k.lock"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "k.lock"+ExclSuffix)); err != nil {
		t.Fatalf("no lock file: %v", err)
	}
	l.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "k.lock"+ExclSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the lock file was left after Unlock")
	}
}

// Two holders of the lock-file protocol never hold it at once.
func TestExclIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock.excl")
	var held, max atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				l, err := acquireExcl(context.Background(), path, Options{Poll: time.Millisecond})
				if err != nil {
					t.Error(err)
					return
				}
				n := held.Add(1)
				if n > max.Load() {
					max.Store(n)
				}
				time.Sleep(100 * time.Microsecond)
				held.Add(-1)
				l.Unlock()
			}
		})
	}
	wg.Wait()
	if max.Load() != 1 {
		t.Fatalf("%d holders at once", max.Load())
	}
}

// A stale lock file is taken over by exactly one of many waiters; a lock whose holder
// keeps it fresh is never taken over; a waiter gives up when its context ends.
func TestStaleTakeOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock.excl")
	os.WriteFile(path, []byte("deadhost 1 1\n"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	var took atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			<-start
			if judged, ok := staleFile(path, time.Minute); ok && claimStale(path, judged, time.Minute) {
				took.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if took.Load() != 1 {
		t.Fatalf("%d waiters took the stale lock over, want 1", took.Load())
	}

	// In a synctest bubble, the holder's refreshes and the waiter's polls run on its fake
	// clock: a busy machine cannot make the holder look stale.
	synctest.Test(t, func(t *testing.T) {
		o := Options{StaleAfter: 200 * time.Millisecond, Poll: 5 * time.Millisecond}
		l, err := acquireExcl(context.Background(), path, o)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // 5 stale periods
		defer cancel()
		waited := false
		_, err = acquireExcl(ctx, path, Options{StaleAfter: o.StaleAfter, Poll: o.Poll, Waiting: func() { waited = true }})
		if !errors.Is(err, context.DeadlineExceeded) || !waited {
			t.Fatalf("a refreshed lock: err %v, waited %v; want a wait until the deadline", err, waited)
		}
	})
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/t\011x`: "/t\tx", `/b\134s`: `/b\s`, `/x\04`: `/x\04`, `/plain`: "/plain"} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// A holder whose lock file was taken over (it stopped refreshing for longer than
// StaleAfter, say it was suspended) neither refreshes nor removes the new holder's file.
// In a synctest bubble: the refresh periods pass on its fake clock, every one of them.
func TestLostLockLeavesTheNewHolderAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock.excl")
	synctest.Test(t, func(t *testing.T) {
		l, err := acquireExcl(context.Background(), path, Options{StaleAfter: 40 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		// A waiter judged it stale and removed it; another holder created its own.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("otherhost 7 7\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		then := time.Now().Add(-time.Second).Truncate(time.Second)
		os.Chtimes(path, then, then)
		time.Sleep(60 * time.Millisecond) // several refresh periods
		synctest.Wait()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !st.ModTime().Equal(then) {
			t.Errorf("the lost holder refreshed the new holder's lock file (mtime %s, want %s)", st.ModTime(), then)
		}
		if err := l.Unlock(); err == nil || !strings.Contains(err.Error(), "taken over") {
			t.Errorf("Unlock of a lost lock: %v, want an error saying it was taken over", err)
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != "otherhost 7 7\n" {
			t.Fatalf("the new holder's lock file is gone or changed: %q, %v", data, err)
		}
	})
}

// Between a waiter's look (stale) and its claim, another waiter may have taken the stale
// file over and a new holder created a fresh one: the claim must leave that one in place.
func TestTakeOverSparesAFreshLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock.excl")
	os.WriteFile(path, []byte("deadhost 1 1\n"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	judged, ok := staleFile(path, time.Minute)
	if !ok {
		t.Fatal("a file an hour old was not judged stale")
	}
	// Another waiter takes it over; a new holder creates a fresh lock.
	os.Remove(path)
	os.WriteFile(path, []byte("newhost 2 2\n"), 0o644)
	if claimStale(path, judged, time.Minute) {
		t.Fatal("a fresh lock was claimed as stale")
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "newhost 2 2\n" {
		t.Fatalf("the fresh lock file is gone or changed: %q, %v", data, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("files left beside the lock: %v", ents)
	}
}

// A waiter whose context is cancelled while it waits gets the context's error.
func TestCancelWhileWaiting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock.excl")
	l, err := acquireExcl(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	_, err = acquireExcl(ctx, path, Options{Poll: time.Millisecond, Waiting: cancel})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want context.Canceled naming %s", err, path)
	}
}

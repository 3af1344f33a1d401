package image

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/filelock"
)

// lockExcl is the lock-file protocol as the cache uses it.
func lockExcl(ctx context.Context, path string, waiting func()) (Lock, error) {
	return filelock.AcquireFile(ctx, path, filelock.Options{Waiting: waiting, StaleAfter: staleAfter})
}

func TestExclLockExcludesAndTakesOverStaleLocks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.lock.excl")
	l, err := lockExcl(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A second taker waits (and says so) while the first holds it: it does not get the
	// lock before its context ends, here as soon as it says it waits.
	waited := false
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := lockExcl(ctx, p, func() { waited = true; cancel() }); err == nil || !waited {
		t.Fatalf("second lock: %v, waited %v", err, waited)
	}
	cancel()
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	// A holder that died leaves a lock file that stops being refreshed: taken over.
	if err := os.WriteFile(p, []byte("deadhost 999999 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleAfter)
	os.Chtimes(p, old, old)
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute) // does not hang: taken over at the first look
	defer cancel2()
	l2, err := lockExcl(ctx2, p, nil)
	if err != nil {
		t.Fatalf("stale lock not taken over: %v", err)
	}
	l2.Unlock()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("lock file left after unlock: %v", err)
	}
}

func TestFlockLockWaitsForTheHolder(t *testing.T) {
	c := newCache(t)
	key := "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	l, err := c.Lock(context.Background(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan bool, 1)
	waiting := make(chan struct{})
	go func() {
		waited := false
		l2, err := c.Lock(context.Background(), key, func() { waited = true; close(waiting) })
		if err == nil {
			l2.Unlock()
		}
		got <- waited && err == nil
	}()
	select {
	case <-waiting: // the second builder waits for the first
	case <-got:
		t.Fatal("the second builder took the lock while the first held it")
	}
	l.Unlock()
	if !<-got {
		t.Fatal("the second builder did not wait for the first")
	}
}

// Prune removes build lock files an hour old or more that nobody holds, and only those.
func TestPruneRemovesUnheldOldLockFiles(t *testing.T) {
	c := newCache(t)
	old := time.Now().Add(-2 * time.Hour)
	held, free, young := strings.Repeat("a1", 32), strings.Repeat("b2", 32), strings.Repeat("c3", 32)
	l, err := c.Lock(t.Context(), held, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	for _, k := range []string{free, young} {
		l, err := c.Lock(t.Context(), k, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Unlock()
	}
	excl := filepath.Join(c.Dir, "."+strings.Repeat("d4", 32)+".lock.excl")
	os.WriteFile(excl, []byte("host 1 2\n"), 0o644)
	lockPath := func(k string) string { return filepath.Join(c.Dir, "."+k+".lock") }
	for _, p := range []string{lockPath(held), lockPath(free), excl} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	for _, dry := range []bool{true, false} {
		res, err := c.Prune(PruneOptions{DryRun: dry})
		pruned := res.Removed
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range pruned {
			got = append(got, p.Path)
		}
		sort.Strings(got)
		if want := []string{lockPath(free), excl}; !slices.Equal(got, want) {
			t.Fatalf("dry run %v: pruned %v, want %v", dry, got, want)
		}
		_, err = os.Stat(lockPath(free))
		if dry != (err == nil) {
			t.Fatalf("dry run %v: the free lock file: %v", dry, err)
		}
	}
	for _, p := range []string{lockPath(held), lockPath(young)} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a lock file in use or young was removed: %v", err)
		}
	}
}

// Prune saw an old O_EXCL lock file, but a builder took it over before Prune got to it:
// the builder's fresh lock stays.
func TestPruneLeavesAnExclLockTakenOverMeanwhile(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".k.lock.excl")
	l, err := lockExcl(t.Context(), p, nil) // the builder's live lock
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if pruneLockFile(p, false) || pruneLockFile(p, true) {
		t.Fatal("a live lock was pruned")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the live lock file is gone: %v", err)
	}
}

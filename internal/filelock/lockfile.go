package filelock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// The lock-file protocol, for filesystems where flock cannot be trusted:
//
//   - take: create the file with O_EXCL and write an owner line (host pid nanotime);
//   - hold: touch its mtime every quarter of StaleAfter, as long as the file is still this
//     holder's (same file, same owner line);
//   - release: remove it, only if it is still this holder's;
//   - take over: a file not touched for StaleAfter is stale; a waiter renames it to a name
//     of its own and checks it again there (see claimStale) before removing it.

// exclLock is a held lock file.
type exclLock struct {
	path  string
	owner []byte      // the owner line this holder wrote
	mine  fs.FileInfo // the file this holder created
	stale time.Duration
	stop  chan struct{}
	done  chan struct{}
	lost  bool // set by refresh before done is closed
}

func acquireExcl(ctx context.Context, path string, o Options) (Lock, error) {
	host, _ := os.Hostname()
	owner := fmt.Appendf(nil, "%s %d %d\n", host, os.Getpid(), time.Now().UnixNano())
	for {
		l, err := createExcl(path, owner, o.stale())
		if err == nil {
			go l.refresh()
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if judged, ok := staleFile(path, o.stale()); ok && claimStale(path, judged, o.stale()) {
			continue
		}
		if o.Waiting != nil {
			o.Waiting()
			o.Waiting = nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the lock %s: %w", path, ctx.Err())
		case <-time.After(o.poll()):
		}
	}
}

// createExcl creates the lock file; an error wrapping fs.ErrExist means it is held.
func createExcl(path string, owner []byte, stale time.Duration) (*exclLock, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("creating the lock file %s: %w (is its folder writable?)", path, err)
	}
	_, werr := f.Write(owner)
	st, serr := f.Stat()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = serr
	}
	if werr != nil {
		os.Remove(path)
		return nil, fmt.Errorf("writing the lock file %s: %w", path, werr)
	}
	return &exclLock{path: path, owner: owner, mine: st, stale: stale, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// staleFile reports whether the lock file at path has not been touched for stale, and
// what it was when judged so.
func staleFile(path string, stale time.Duration) (fs.FileInfo, bool) {
	st, err := os.Stat(path)
	if err != nil || time.Since(st.ModTime()) <= stale {
		return nil, false
	}
	return st, true
}

// claimStale removes the lock file judged stale, and reports whether it did. Between the
// look and now another waiter may have taken it over and a new holder created a fresh
// one, so the file is first renamed to a name of this waiter's own (only one waiter's
// rename of a file succeeds), then checked again there: the same file (device and inode)
// and still stale is removed; anything else is a fresh lock and goes back (never over a
// newer one: if a third holder created one meanwhile, the fresh one is lost and its holder
// finds out when it next refreshes; the work is then done twice, never wrongly).
func claimStale(path string, judged fs.FileInfo, stale time.Duration) bool {
	b := make([]byte, 8)
	rand.Read(b)
	aside := path + ".stale-" + hex.EncodeToString(b)
	if err := os.Rename(path, aside); err != nil {
		return false // another waiter moved it first
	}
	cur, err := os.Stat(aside)
	if err == nil && os.SameFile(judged, cur) && time.Since(cur.ModTime()) > stale {
		os.Remove(aside)
		return true
	}
	err = os.Link(aside, path)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		// No hard links here: rename it back unless a newer lock is in place.
		if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) && os.Rename(aside, path) == nil {
			return false
		}
	}
	os.Remove(aside)
	return false
}

// held reports whether the lock file is still this holder's: the same file, with this
// holder's owner line (a file created anew may reuse the inode).
func (l *exclLock) held() bool {
	st, err := os.Stat(l.path)
	if err != nil || !os.SameFile(st, l.mine) {
		return false
	}
	data, err := os.ReadFile(l.path)
	return err == nil && bytes.Equal(data, l.owner)
}

// refresh touches the lock file while it is held; it stops when Unlock asks, or when the
// file is no longer this holder's (taken over: it must not keep a new holder's file fresh).
func (l *exclLock) refresh() {
	defer close(l.done)
	t := time.NewTicker(l.stale / 4)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			if !l.held() {
				l.lost = true
				return
			}
			_ = os.Chtimes(l.path, now, now)
		}
	}
}

// Unlock stops the refresh and removes the lock file if it is still this holder's. A lock
// taken over while held is an error (and the new holder's file stays).
func (l *exclLock) Unlock() error {
	close(l.stop)
	<-l.done
	if l.lost || !l.held() {
		return fmt.Errorf("the lock file %s was taken over by another holder while held: it was not refreshed for %s (was this process stopped, or the filesystem unreachable?); the work it guarded may have been done twice", l.path, l.stale)
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the lock file %s: %w", l.path, err)
	}
	return nil
}

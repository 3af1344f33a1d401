package filelock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Lock is a held lock.
type Lock interface {
	Unlock() error
}

// Options tune Acquire; the zero value works.
type Options struct {
	// Waiting is called once when another holder makes Acquire wait.
	Waiting func()
	// Poll is how often a waiter tries again (default 200 ms).
	Poll time.Duration
	// StaleAfter is when a lock file whose holder stopped refreshing it is taken over
	// (default 2 minutes); the holder refreshes it every quarter of that.
	StaleAfter time.Duration
}

func (o Options) poll() time.Duration {
	if o.Poll > 0 {
		return o.Poll
	}
	return 200 * time.Millisecond
}

func (o Options) stale() time.Duration {
	if o.StaleAfter > 0 {
		return o.StaleAfter
	}
	return 2 * time.Minute
}

// ExclSuffix is added to path for the lock file used where flock cannot be trusted.
const ExclSuffix = ".excl"

// Acquire takes the exclusive lock named by path, waiting until ctx ends: flock on path,
// or the lock file path+ExclSuffix where flock is unsupported (ENOLCK, EOPNOTSUPP) or
// local to this machine (see LocalOnly).
func Acquire(ctx context.Context, path string, o Options) (Lock, error) {
	if local, _ := LocalOnly(filepath.Dir(path)); local {
		return acquireExcl(ctx, path+ExclSuffix, o)
	}
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err == nil && !ok {
		if o.Waiting != nil {
			o.Waiting()
			o.Waiting = nil
		}
		ok, err = fl.TryLockContext(ctx, o.poll())
	}
	if err == nil && ok {
		return fl, nil
	}
	if err != nil && !Unsupported(err) {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("locking %s: %w", path, ctx.Err())
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return acquireExcl(ctx, path+ExclSuffix, o)
}

// Unsupported reports whether a flock error means the filesystem has no flock.
func Unsupported(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

// exclLock is a held lock file.
type exclLock struct {
	path  string
	stale time.Duration
	stop  chan struct{}
	done  chan struct{}
}

// AcquireFile takes the lock file at path itself (the protocol Acquire falls back to):
// created with O_EXCL, refreshed while held, taken over when stale.
func AcquireFile(ctx context.Context, path string, o Options) (Lock, error) {
	return acquireExcl(ctx, path, o)
}

func acquireExcl(ctx context.Context, path string, o Options) (Lock, error) {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s %d %d\n", host, os.Getpid(), time.Now().UnixNano())
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.WriteString(owner)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path)
				return nil, fmt.Errorf("writing lock file %s: %w", path, werr)
			}
			l := &exclLock{path: path, stale: o.stale(), stop: make(chan struct{}), done: make(chan struct{})}
			go l.refresh()
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("creating lock file %s: %w", path, err)
		}
		if takeOver(path, o.stale()) {
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

// takeOver removes the lock file if it is stale, and reports whether it did. Between the
// look and the removal another waiter may have taken it over and made a fresh one, so the
// file is first renamed to a name of this waiter's own, then checked again there: the
// same file (device and inode) and still stale is removed; anything else was a fresh
// lock and is linked back (never over a newer one).
func takeOver(path string, stale time.Duration) bool {
	st, err := os.Stat(path)
	if err != nil || time.Since(st.ModTime()) <= stale {
		return false
	}
	b := make([]byte, 8)
	rand.Read(b)
	aside := path + ".stale-" + hex.EncodeToString(b)
	if err := os.Rename(path, aside); err != nil {
		return false // another waiter moved it first
	}
	cur, err := os.Stat(aside)
	if err == nil && os.SameFile(st, cur) && time.Since(cur.ModTime()) > stale {
		os.Remove(aside)
		return true
	}
	// Not the file judged stale: a fresh lock of another holder. Put it back.
	if err := os.Link(aside, path); err == nil || errors.Is(err, fs.ErrExist) {
		os.Remove(aside)
	}
	return false
}

func (l *exclLock) refresh() {
	defer close(l.done)
	t := time.NewTicker(l.stale / 4)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			_ = os.Chtimes(l.path, now, now)
		}
	}
}

func (l *exclLock) Unlock() error {
	close(l.stop)
	<-l.done
	return os.Remove(l.path)
}

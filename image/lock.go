package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Lock is held by the one builder of a key. Correctness never depends on it (readers open
// only final names); it only keeps two builders from doing the same work twice.
type Lock interface {
	Unlock() error
}

// staleAfter is when an O_EXCL lock file whose holder stopped refreshing it is taken over.
const staleAfter = 2 * time.Minute

// lockKey takes the lock for a key, waiting until ctx is done. It uses flock(2) and falls
// back to an O_EXCL lock file (refreshed while held, taken over when stale) on filesystems
// without flock, such as NFS mounted with nolock.
func lockKey(ctx context.Context, path string, waiting func()) (Lock, error) {
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err == nil && !ok {
		if waiting != nil {
			waiting()
		}
		ok, err = fl.TryLockContext(ctx, 200*time.Millisecond)
	}
	if err == nil && ok {
		return fl, nil
	}
	if err != nil && !flockUnsupported(err) {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return lockExcl(ctx, path+".excl", waiting)
}

func flockUnsupported(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

type exclLock struct {
	path string
	stop chan struct{}
	done chan struct{}
}

func lockExcl(ctx context.Context, path string, waiting func()) (Lock, error) {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s %d %d\n", host, os.Getpid(), time.Now().UnixNano())
	announced := false
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.WriteString(owner)
			f.Close()
			if werr != nil {
				os.Remove(path)
				return nil, werr
			}
			l := &exclLock{path: path, stop: make(chan struct{}), done: make(chan struct{})}
			go l.refresh()
			return l, nil
		}
		if !os.IsExist(err) {
			return nil, fmt.Errorf("creating lock file %s: %w", path, err)
		}
		if st, err := os.Stat(path); err == nil && time.Since(st.ModTime()) > staleAfter {
			// The holder stopped refreshing (crashed): take the lock over.
			if cur, err := os.Stat(path); err == nil && cur.ModTime().Equal(st.ModTime()) {
				_ = os.Remove(path)
				continue
			}
		}
		if !announced && waiting != nil {
			waiting()
			announced = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (l *exclLock) refresh() {
	defer close(l.done)
	t := time.NewTicker(staleAfter / 4)
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

// pruneLockFile removes a build lock file (an hour old or more) that nobody holds, and says
// whether it was (or, with dryRun, would be) removed. Prune takes the lock the way a
// builder would and removes the file while it holds it, so it never removes a lock a
// builder holds on this filesystem. A flock file where flock is unsupported is a stub that
// nobody locks (the O_EXCL file beside it is the lock). A builder that opened a flock file
// just before it was removed could still run beside one that creates it anew: the work is
// then done twice, never wrongly (readers open only complete entries).
func pruneLockFile(path string, dryRun bool) bool {
	if strings.HasSuffix(path, ".excl") {
		if dryRun {
			st, err := os.Stat(path)
			return err == nil && time.Since(st.ModTime()) > staleAfter
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // one try: a stale file is taken over, a live one is not waited for
		l, err := lockExcl(ctx, path, nil)
		if err != nil {
			return false
		}
		return l.Unlock() == nil
	}
	fl := flock.New(path)
	ok, err := fl.TryLock()
	switch {
	case err != nil && flockUnsupported(err):
		return dryRun || os.Remove(path) == nil
	case err != nil || !ok:
		return false // held by a builder
	}
	defer fl.Unlock()
	return dryRun || os.Remove(path) == nil
}

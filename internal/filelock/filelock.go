package filelock

import (
	"context"
	"errors"
	"fmt"
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
	if err := checkPlanted(path); err != nil {
		return nil, err
	}
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDONLY|noFollow), flock.SetPermissions(0o644))
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

// AcquireFile takes the lock file at path itself (the protocol Acquire falls back to):
// created with O_EXCL, refreshed while held, taken over when stale.
func AcquireFile(ctx context.Context, path string, o Options) (Lock, error) {
	return acquireExcl(ctx, path, o)
}

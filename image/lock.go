package image

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/benchctl/benchctl/internal/filelock"
)

// Lock is held by the one builder of a key. Correctness never depends on it (readers open
// only final names); it only keeps two builders from doing the same work twice.
type Lock = filelock.Lock

// staleAfter is when a lock file whose holder stopped refreshing it is taken over.
const staleAfter = 2 * time.Minute

// lockKey takes the lock for a key, waiting until ctx is done (internal/filelock: flock,
// or a lock file where flock is missing or local to this machine, as on NFS mounted
// nolock).
func lockKey(ctx context.Context, path string, waiting func()) (Lock, error) {
	return filelock.Acquire(ctx, path, filelock.Options{Waiting: waiting, StaleAfter: staleAfter})
}

// pruneLockFile removes a build lock file (an hour old or more) that nobody holds, and says
// whether it was (or, with dryRun, would be) removed. Prune takes the lock the way a
// builder would and removes the file while it holds it, so it never removes a lock a
// builder holds on this filesystem. A flock file where flock is unsupported is a stub that
// nobody locks (the O_EXCL file beside it is the lock). A builder that opened a flock file
// just before it was removed could still run beside one that creates it anew: the work is
// then done twice, never wrongly (readers open only complete entries).
func pruneLockFile(path string, dryRun bool) bool {
	if strings.HasSuffix(path, filelock.ExclSuffix) {
		if dryRun {
			st, err := os.Stat(path)
			return err == nil && time.Since(st.ModTime()) > staleAfter
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // one try: a stale file is taken over, a live one is not waited for
		l, err := filelock.AcquireFile(ctx, path, filelock.Options{StaleAfter: staleAfter})
		if err != nil {
			return false
		}
		return l.Unlock() == nil
	}
	fl := flock.New(path, flock.SetFlag(pruneLockFlags))
	ok, err := fl.TryLock()
	switch {
	case err != nil && filelock.Unsupported(err):
		return dryRun || os.Remove(path) == nil
	case err != nil || !ok:
		return false // held by a builder
	}
	defer fl.Unlock()
	return dryRun || os.Remove(path) == nil
}

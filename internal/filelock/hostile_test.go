package filelock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A co-writer of the shared cache plants a link, or a FIFO, where a lock file goes. A root
// build must neither create the link's target nor hang on the FIFO.
func TestAcquireRefusesPlantedLockFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "etc-cron.d-evil")

	link := filepath.Join(dir, ".k.lock")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, ".f.lock")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, ".d.lock")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{link, "symbolic link"},
		{fifo, "FIFO"},
		{sub, "folder"},
	} {
		// A refusal comes at once: an Acquire that waits says so (Waiting), and is ended then.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // does not hang
		waited := false
		l, err := Acquire(ctx, tc.path, Options{Poll: 10 * time.Millisecond, Waiting: func() { waited = true; cancel() }})
		cancel()
		if err == nil {
			l.Unlock()
			t.Errorf("%s: locked; want a refusal", tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: error %q should name the path and say %q", tc.path, err, tc.want)
		}
		if waited {
			t.Errorf("%s: waited for the deadline instead of refusing: %v", tc.path, err)
		}
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("the link's target %s was created", victim)
	}
}

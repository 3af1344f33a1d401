package jobdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A co-writer replaces jobs/.submit with a link to someone's folder that holds files of
// the names a submission has: neither the removal at a job's end nor the prune may delete
// anything there.
func TestSubmitRemovalNeverFollowsALinkedFolder(t *testing.T) {
	l := Layout{t.TempDir()}
	victim := t.TempDir()
	files := map[string]string{"42.job": "tok\n", "tok.secret": "s", "tok.sh": "#!/bin/sh\n", "old.secret": "s", "old.sh": "x"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(victim, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-30 * 24 * time.Hour)
		os.Chtimes(filepath.Join(victim, name), old, old)
	}
	if err := os.MkdirAll(filepath.Dir(l.Submit()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, l.Submit()); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveSubmitted("42"); err == nil {
		t.Error("RemoveSubmitted through a linked .submit: no error")
	}
	if _, err := l.PruneSubmitted(time.Hour, time.Now(), func(string) bool { return false }); err == nil {
		t.Error("PruneSubmitted through a linked .submit: no error")
	}
	for name := range files {
		if _, err := os.Lstat(filepath.Join(victim, name)); err != nil {
			t.Errorf("%s of the linked folder: %v", name, err)
		}
	}
}

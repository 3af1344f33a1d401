//go:build linux

package jobdir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
)

// The job and node folders are created by the nodes together (an existing one of this
// user is fine), but a link, or another user's folder, planted where they go is refused.
func TestCreateJobAndNodeRefusePlantedFolders(t *testing.T) {
	shared := t.TempDir()
	l := Layout{Shared: shared}
	a, err := l.CreateJob("7", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := l.CreateJob("7", 0) // another node of the same job
	if err != nil {
		t.Fatalf("an existing folder of this user: %v", err)
	}
	b.Close()
	n1, err := a.CreateNode(0, "n1")
	if err != nil {
		t.Fatal(err)
	}
	n1.Close()

	elsewhere := t.TempDir()
	os.Symlink(elsewhere, filepath.Join(l.Jobs(), "8"))
	var nf *safefile.NotFolderError
	if _, err := l.CreateJob("8", 0); !errors.As(err, &nf) {
		t.Errorf("CreateJob over a link: %v", err)
	}
	if _, err := l.OpenJob("8", 0); !errors.As(err, &nf) {
		t.Errorf("OpenJob of a link: %v", err)
	}
	os.Symlink(elsewhere, filepath.Join(a.Nodes(), "1-n2"))
	if _, err := a.CreateNode(1, "n2"); !errors.As(err, &nf) {
		t.Errorf("CreateNode over a link: %v", err)
	}
	if _, err := a.CreateNode(1, "../x"); err == nil {
		t.Error("a host with a slash made a folder")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through a link: %v", ents)
	}

	if os.Geteuid() != 0 {
		return
	}
	other := filepath.Join(l.Jobs(), "9")
	os.Mkdir(other, 0o777)
	os.Chown(other, 65534, 65534)
	var oe *safefile.OwnerError
	if _, err := l.CreateJob("9", 0); !errors.As(err, &oe) || oe.Owner != 65534 {
		t.Errorf("CreateJob in another user's folder: %v", err)
	}
}

// ReplaceJob writes job.json whole; SyncJob makes it durable, and refuses a job.json that a
// co-writer swapped for a FIFO or a link instead of blocking on it or following it.
func TestReplaceAndSyncJob(t *testing.T) {
	l := Layout{Shared: t.TempDir()}
	f, err := l.CreateJob("9", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.ReplaceJob(&Job{Job: "9", World: 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncJob(); err != nil {
		t.Fatal(err)
	}
	j, err := ReadJob(f.JobFile())
	if err != nil || j.Job != "9" || j.Version != JobVersion {
		t.Fatalf("%+v %v", j, err)
	}
	for _, plant := range []func(string) error{
		func(p string) error { return syscall.Mkfifo(p, 0o644) },
		func(p string) error { return os.Symlink("/etc/passwd", p) },
	} {
		if err := os.Remove(f.JobFile()); err != nil {
			t.Fatal(err)
		}
		if err := plant(f.JobFile()); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- f.SyncJob() }()
		select {
		case err := <-done:
			if err == nil {
				t.Error("a job.json that is not a regular file was synced")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("SyncJob blocked on a FIFO")
		}
	}
}

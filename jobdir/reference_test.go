package jobdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReferenceRoundTrip(t *testing.T) {
	l := Layout{Shared: t.TempDir()}
	if r, err := l.ReadReference("bench"); r != nil || err != nil {
		t.Fatalf("no reference yet: %v %v", r, err)
	}
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	if err := l.SetReference(Reference{Manifest: "bench", Job: "123", Attempt: 1, SetAt: at}); err != nil {
		t.Fatal(err)
	}
	r, err := l.ReadReference("bench")
	if err != nil || r.Job != "123" || r.Attempt != 1 || !r.SetAt.Equal(at) || r.Version != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	if err := l.ClearReference("bench"); err != nil {
		t.Fatal(err)
	}
	if r, _ := l.ReadReference("bench"); r != nil {
		t.Errorf("cleared, still %+v", r)
	}
	if err := l.ClearReference("bench"); err != nil {
		t.Errorf("clearing none: %v", err)
	}
}

// Names that would reach outside the folder, links and foreign files are refused.
func TestReferenceHostile(t *testing.T) {
	l := Layout{Shared: t.TempDir()}
	for _, name := range []string{"../x", "a/b", "", "..", "UPPER", strings.Repeat("a", 64)} {
		if err := l.SetReference(Reference{Manifest: name, Job: "1"}); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
	if err := l.SetReference(Reference{Manifest: "ok", Job: "1"}); err != nil {
		t.Fatal(err)
	}
	// A link in place of the file is never followed.
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(target, []byte(`{"version":1,"manifest":"linked","job":"9"}`), 0o644)
	os.Symlink(target, l.ReferenceFile("linked"))
	if r, err := l.ReadReference("linked"); err == nil {
		t.Errorf("read through a link: %+v", r)
	}
	// A file naming another manifest, or no job, is not a reference.
	os.WriteFile(l.ReferenceFile("other"), []byte(`{"version":1,"manifest":"ok","job":"9"}`), 0o644)
	if _, err := l.ReadReference("other"); err == nil || !strings.Contains(err.Error(), "not a reference benchctl wrote") {
		t.Errorf("%v", err)
	}
	// A FIFO is never opened for reading (it would block).
	fifo := l.ReferenceFile("fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		done := make(chan error, 1)
		go func() { _, err := l.ReadReference("fifo"); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("a FIFO read as a reference")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("reading a FIFO reference blocked")
		}
	}
}

// A reference another user planted (their file, or one others may write) is not believed:
// it could name their own job as this user's baseline.
func TestAForeignReferenceIsNotBelieved(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test plants another user's file: it runs as root (CI does)")
	}
	l := Layout{Shared: t.TempDir()}
	if err := l.SetReference(Reference{Manifest: "m", Job: "8"}); err != nil {
		t.Fatal(err)
	}
	if r, err := l.ReadReference("m"); err != nil || r == nil || r.Job != "8" {
		t.Fatalf("own: %+v %v", r, err)
	}
	os.Lchown(l.ReferenceFile("m"), 4242, 4242)
	var fe *ForeignReferenceError
	if r, err := l.ReadReference("m"); !errors.As(err, &fe) || r != nil {
		t.Errorf("another user's: %+v %v", r, err)
	}
	os.Lchown(l.ReferenceFile("m"), 0, 0)
	os.Chmod(l.ReferenceFile("m"), 0o666)
	if r, err := l.ReadReference("m"); !errors.As(err, &fe) || r != nil {
		t.Errorf("writable by others: %+v %v", r, err)
	}
}

//go:build linux

package jobdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
)

// returns fails the test if f blocks (a FIFO opened for reading without a writer).
func returns(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
}

// A FIFO in place of job.json or status.json is refused at once (ReadJob blocked forever).
func TestFIFOsInTheJobFolder(t *testing.T) {
	d := Layout{t.TempDir()}.Job("7", 0)
	n := d.Node(0, "h")
	os.MkdirAll(n.Path, 0o755)
	if err := syscall.Mkfifo(d.JobFile(), 0o644); err != nil {
		t.Skip(err)
	}
	syscall.Mkfifo(n.Status(), 0o644)
	var nr *safefile.NotRegularError
	returns(t, func() {
		if _, err := ReadJob(d.JobFile()); !errors.As(err, &nr) {
			t.Errorf("ReadJob(fifo) = %v", err)
		}
	})
	returns(t, func() {
		if _, err := ReadStatus(n.Status()); !errors.As(err, &nr) {
			t.Errorf("ReadStatus(fifo) = %v", err)
		}
	})
	returns(t, func() {
		if p := d.Progress(); len(p) != 0 {
			t.Errorf("Progress = %v", p)
		}
	})
	returns(t, func() {
		// an attempt folder whose job.json is a FIFO is still listed and found
		os.MkdirAll(filepath.Join(d.Path+".1"), 0o755)
		syscall.Mkfifo(filepath.Join(d.Path+".1", JobFile), 0o644)
		if got, err := (Layout{filepath.Dir(filepath.Dir(d.Path))}).Find("7", -1); err != nil || got.Attempt != 1 {
			t.Errorf("Find = %+v, %v", got, err)
		}
	})
}

func TestStatusLinkAndSizeRefused(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "elsewhere.json")
	os.WriteFile(outside, []byte(`{"outcome":"success"}`), 0o644)
	link := filepath.Join(dir, StatusFile)
	os.Symlink(outside, link)
	if _, err := ReadStatus(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a linked status.json: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.Truncate(MaxStatusSize + 1)
	f.Close()
	var tl *safefile.TooLargeError
	if _, err := ReadStatus(big); !errors.As(err, &tl) {
		t.Errorf("a 16 MiB+1 status.json: %v", err)
	}
	if _, err := ReadJob(big); !errors.As(err, &tl) {
		t.Errorf("a 16 MiB+1 job.json: %v", err)
	}
}

// A job folder named with terminal escapes (anyone who can write to jobs/ names them) was
// listed raw in the "no such job" error: the ids are shown escaped.
func TestJobNotFoundEscapesFolderNames(t *testing.T) {
	l := Layout{t.TempDir()}
	os.MkdirAll(filepath.Join(l.Jobs(), "7\x1b]0;pwned\x07\u202e"), 0o755)
	_, err := l.Find("8", -1)
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07\u202e") || !strings.Contains(err.Error(), `7\x1b]0;pwned\x07\u202e`) {
		t.Errorf("Find = %q", err)
	}
}

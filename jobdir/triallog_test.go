package jobdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A trial log planted as a link or FIFO is neither written through nor read (without
// blocking); a damaged line ends the reading, naming it, the records before it kept; an
// over-long line and a record that is no trial's are damage too; no log is fs.ErrNotExist.
func TestTrialLogHostile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, TrialLogFile)
	read := func() (int, error) {
		done := make(chan struct{})
		var n int
		var err error
		go func() { n, err = ReadTrialLog(p, func(BenchmarkStatus) {}); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("ReadTrialLog blocked")
		}
		return n, err
	}
	if _, err := read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no log: %v", err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(`{"name":"x","trial":1}`+"\n"), 0o600)
	os.Symlink(secret, p)
	if n, err := read(); err == nil || n != 0 {
		t.Errorf("a link: %d %v", n, err)
	}
	os.Remove(p)
	syscall.Mkfifo(p, 0o644)
	if n, err := read(); err == nil || n != 0 {
		t.Errorf("a FIFO: %d %v", n, err)
	}
	os.Remove(p)
	good := `{"name":"b","outcome":"success","trial":1}` + "\n"
	for _, c := range []struct{ name, body, want string }{
		{"a damaged line", good + "{not json\n" + good, "line 2 is not a trial record"},
		{"a record of no trial", good + `{"name":"b","trial":0}` + "\n", "line 2 is not a trial record"},
		{"an over-long line", good + `{"name":"` + strings.Repeat("x", MaxTrialRecordSize) + `","trial":2}` + "\n", "line 2: longer than"},
	} {
		os.WriteFile(p, []byte(c.body), 0o644)
		if n, err := read(); n != 1 || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %d records, %v; want 1 and %q", c.name, n, err, c.want)
		}
	}
}

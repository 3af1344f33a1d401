package runner

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A status.json that cannot be written is reported: logged once per distinct error, and
// kept for Run to turn into a failure. (Before: every write error was dropped.)
func TestStatusWriteFailuresAreReported(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "nodes")
	if err := os.WriteFile(blocker, []byte("a file where the node folder should be"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	f := newStatusFile(filepath.Join(blocker, "0-n1", "status.json"), Node{JobID: "1", Host: "n1", World: 1})
	f.log = slog.New(slog.NewTextHandler(&logs, nil))
	for range 5 {
		f.phase("image")(nil)
	}
	if f.writeErr() == nil {
		t.Fatal("the write error was dropped")
	}
	if n := strings.Count(logs.String(), "could not write status.json"); n != 1 {
		t.Errorf("%d log lines for one error, want 1:\n%s", n, logs.String())
	}
	ok := newStatusFile(filepath.Join(dir, "status.json"), Node{JobID: "1", Host: "n1", World: 1})
	ok.phase("image")(nil)
	if ok.writeErr() != nil {
		t.Fatal(ok.writeErr())
	}
}

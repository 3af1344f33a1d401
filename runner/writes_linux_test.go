//go:build linux

package runner

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/workload/engine"

	"github.com/benchctl/benchctl/diagnostics"
	"github.com/benchctl/benchctl/jobdir"
)

// A link planted where a benchmark's log goes (or a FIFO) is not followed: the container
// log was opened with O_TRUNC through any link, truncating the file it named.
func TestContainerLogIsNeverALink(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	files := testFiles(t, "b")
	if err := os.Symlink(victim, files.node.Log("b")); err != nil {
		t.Fatal(err)
	}
	res := runContainer(context.Background(), engine.New(&hangingEngine{}), Spec{Name: "benchctl-1-0-r0-b", Image: "img", Command: []string{"/b"}}, time.Hour, files, io.Discard, testBudget, nil)
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was truncated or written: %q", b)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "symbolic link") {
		t.Fatalf("res %+v, want a failure naming the link", res)
	}

	fifo := testFiles(t, "b")
	if err := syscall.Mkfifo(fifo.node.Log("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan execResult, 1)
	go func() {
		done <- runContainer(context.Background(), engine.New(&hangingEngine{}), Spec{Name: "x", Image: "img", Command: []string{"/b"}}, time.Hour, fifo, io.Discard, testBudget, nil)
	}()
	select {
	case res := <-done:
		if res.Err == nil || !strings.Contains(res.Err.Error(), "FIFO") {
			t.Fatalf("res %+v, want a failure naming the FIFO", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening the log blocked on a FIFO")
	}
}

// Results and diagnostics folders: a link planted at results/, results/<bench>,
// diagnostics/ or diagnostics/<bench> is refused, and nothing is written where it leads.
func TestResultsAndDiagnosticsFoldersAreNeverLinks(t *testing.T) {
	for _, rel := range []string{jobdir.ResultsFolder, jobdir.ResultsRel("b"), jobdir.DiagFolder, jobdir.DiagRel("b")} {
		t.Run(rel, func(t *testing.T) {
			elsewhere := t.TempDir()
			files := testFiles(t, "b")
			p := filepath.Join(files.node.Path, rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Fatal(err)
			}
			rerr := makeResultsDir(files.node, "b", "", nil)
			derr := files.writeDiag(diagnostics.Report{Reason: "x"})
			if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
				t.Fatalf("written through the link: %v", ents)
			}
			if fi, _ := os.Stat(elsewhere); fi.Mode().Perm() != 0o700 && fi.Mode().Perm() != 0o755 {
				t.Fatalf("the link's target was chmodded to %v", fi.Mode())
			}
			if strings.HasPrefix(rel, jobdir.ResultsFolder) && (rerr == nil || !strings.Contains(rerr.Error(), "symbolic link")) {
				t.Errorf("makeResultsDir: %v", rerr)
			}
			if strings.HasPrefix(rel, jobdir.DiagFolder) && (derr == nil || !strings.Contains(derr.Error(), "symbolic link")) {
				t.Errorf("writeDiag: %v", derr)
			}
		})
	}
}

//go:build linux

package results

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A link in the middle of a results path (results/b -> /elsewhere) was followed: collect
// read a CSV from outside the node folder. Now the node has a problem naming the link.
func TestResultsPathThroughALinkIsNotFollowed(t *testing.T) {
	job := writeJob(t, t.TempDir(), "1", 1)
	writeNode(t, job, 0, "success", "")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "b.csv"), []byte("model,performance,metric\nstolen,999,x\n"), 0o644)
	res := filepath.Join(job, "nodes", "0-h0", "results", "b")
	os.RemoveAll(res)
	if err := os.Symlink(outside, res); err != nil {
		t.Fatal(err)
	}
	s := aggregate(t, job)
	all := strings.Join(append(s.Problems, problemsOf(s)...), "\n")
	if strings.Contains(all, "999") || len(s.Benchmarks) != 1 || s.Benchmarks[0].Winner != nil {
		t.Fatalf("a CSV outside the node folder was read: %+v", s.Benchmarks)
	}
	if !strings.Contains(all, "nodes/0-h0/results/b/b.csv: a symbolic link on the way leads outside nodes/0-h0;") {
		t.Errorf("no problem names the link:\n%s", all)
	}
}

// A FIFO in place of a node's results CSV or log is a problem, not a hang.
func TestFIFOResultsAndLogDoNotBlock(t *testing.T) {
	job := writeJob(t, t.TempDir(), "1", 2)
	writeNode(t, job, 0, "success", "")
	writeNode(t, job, 1, "success", "")
	if err := syscall.Mkfifo(filepath.Join(job, "nodes", "0-h0", "results", "b", "b.csv"), 0o644); err != nil {
		t.Skip(err)
	}
	syscall.Mkfifo(filepath.Join(job, "nodes", "1-h1", "b.log"), 0o644)
	done := make(chan *Summary, 1)
	go func() { done <- aggregate(t, job) }()
	select {
	case s := <-done:
		all := strings.Join(problemsOf(s), "\n")
		if !strings.Contains(all, "FIFO") {
			t.Errorf("no problem names the FIFO:\n%s", all)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("collect blocked on a FIFO")
	}
}

// problemsOf lists every per-node and per-benchmark problem text of a summary.
func problemsOf(s *Summary) []string {
	var out []string
	for _, b := range s.Benchmarks {
		for _, f := range b.Failed {
			out = append(out, f.Reason)
		}
		for _, c := range b.Candidates {
			out = append(out, c.Problem)
		}
		out = append(out, b.Reason)
	}
	for _, n := range s.NodeFailures {
		out = append(out, n.Reason)
	}
	return append(out, s.Problems...)
}

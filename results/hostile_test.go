//go:build linux

package results

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// A link in the middle of a results path (results/b -> /elsewhere) was followed: collect
// read a CSV from outside the node folder. Now the node has a problem naming the link.
func TestResultsPathThroughALinkIsNotFollowed(t *testing.T) {
	job := writeJob(t, t.TempDir(), "1", 1)
	writeNode(t, job, 0, "success", "")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "b.csv"), []byte("model,performance,metric\nstolen,999,x\n"), 0o644)
	res := nodeOf(job, 0).Results("b")
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
	if err := syscall.Mkfifo(filepath.Join(nodeOf(job, 0).Results("b"), "b.csv"), 0o644); err != nil {
		t.Skip(err)
	}
	syscall.Mkfifo(nodeOf(job, 1).Log("b"), 0o644)
	done := make(chan *Summary, 1)
	go func() { done <- aggregate(t, job) }()
	select {
	case s := <-done:
		all := strings.Join(problemsOf(s), "\n")
		if !strings.Contains(all, "FIFO") {
			t.Errorf("no problem names the FIFO:\n%s", all)
		}
	case <-time.After(time.Minute): // does not hang: blocked, it would wait forever
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

// writeNodeAs writes a node folder of any name (nd, at any path) whose status says rank and
// host, with b.csv.
func writeNodeAs(t *testing.T, nd jobdir.NodeDir, rank int, host, csv string) {
	t.Helper()
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &jobdir.Status{Version: 1, Rank: rank, Host: host, Outcome: jobdir.OutcomeSuccess, FinishedAt: &end,
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeSuccess, DurationSeconds: 1}}}
	jobdirtest.Status(t, nd, st)
	jobdirtest.Result(t, nd, "b", "b.csv", []byte(csv))
}

// Folders that are not the job's nodes fed the statistics and could win ("NODES 3/2", a
// stray 99999 as MAX): a second folder for rank 1, a rank beyond job.json's world, and
// rank 2's folder linked to one outside the job folder are now problems, never counted;
// rank 2 is a node that never reported.
func TestStrayNodeFoldersAreNotCounted(t *testing.T) {
	job := writeJob(t, t.TempDir(), "1", 3)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nm,1,u\n")
	writeNode(t, job, 1, jobdir.OutcomeSuccess, "model,performance,metric\nm,2,u\n")
	many := "model,performance,metric\nm,99999,u\nn,1,u\no,1,u\n" // more numeric rows: it would win
	writeNodeAs(t, jobdirtest.At(job).NodeNamed("1-evil"), 1, "evil", many)
	writeNodeAs(t, jobdirtest.At(job).NodeNamed("7-x"), 7, "x", many)
	outside := jobdirtest.At(t.TempDir()).Node(2, "h2") // a node folder elsewhere
	writeNodeAs(t, outside, 2, "h2", many)
	if err := os.Symlink(outside.Path, nodeOf(job, 2).Path); err != nil {
		t.Fatal(err)
	}
	s := aggregate(t, job)
	if s.Nodes.Expected != 3 || s.Nodes.Reported != 2 || s.Nodes.Succeeded != 2 {
		t.Errorf("nodes %+v, want 3 expected, 2 reported", s.Nodes)
	}
	b := s.Benchmarks[0]
	if b.Winner == nil || b.Winner.Rank > 1 || b.Winner.Host == "evil" {
		t.Errorf("winner %+v", b.Winner)
	}
	if len(b.Rows) != 1 || b.Rows[0].Stats.Max != "2" || b.Rows[0].Stats.Nodes != 2 {
		t.Errorf("rows %+v", b.Rows)
	}
	all := strings.Join(s.Problems, "\n")
	for _, want := range []string{
		"nodes/1-evil: a second folder for rank 1; job.json says rank 1 ran on h1, so nodes/1-h1 counts and this one does not",
		"nodes/2-h2: a symbolic link; a node folder is never a link (it may lead outside the job folder): not counted",
		"nodes/7-x: rank 7 is beyond the job's 3 nodes (job.json): not counted",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem %q in:\n%s", want, all)
		}
	}
	if s.Status != StatusFailure || !strings.Contains(strings.Join(problemsOf(s), "\n"), "never reported (nodes/2-h2 is not counted: see the problems)") {
		t.Errorf("rank 2 is not reported as never reporting: %s\n%s", s.Status, strings.Join(problemsOf(s), "\n"))
	}
	var out bytes.Buffer
	WriteRows(&out, false, s)
	if strings.Contains(out.String(), "99999") || !strings.Contains(out.String(), " 2/3 ") {
		t.Errorf("table:\n%s", out.String())
	}
}

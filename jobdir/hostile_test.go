//go:build linux

package jobdir

import (
	"context"
	"errors"
	"fmt"
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

// strayJob is a 3-node job (job.json: hosts n1, n2, n3) whose nodes/ also holds what is not
// the job's: a second folder for rank 1 (1-evil), a rank beyond the world (99999-x), rank 2's
// folder as a link to a folder outside the job, and a folder that is no node's name. Every
// one of them says success.
func strayJob(t *testing.T) (Layout, Dir) {
	t.Helper()
	l := Layout{t.TempDir()}
	d := l.Job("31", 0)
	j := &Job{Job: "31", World: 3, Nodes: []string{"n1", "n2", "n3"}, StartedAt: time.Now()}
	os.MkdirAll(d.Nodes(), 0o755)
	if err := WriteJob(d.JobFile(), j); err != nil {
		t.Fatal(err)
	}
	writeNodeStatus(t, d, 0, "n1", OutcomeSuccess, 0, PhaseResults)
	writeNodeStatus(t, d, 1, "n2", OutcomeFailure, 3, PhaseRun)
	writeNodeStatus(t, d, 1, "evil", OutcomeSuccess, 0, PhaseResults)
	writeNodeStatus(t, d, 99999, "x", OutcomeSuccess, 0, PhaseResults)
	outside := Layout{t.TempDir()}.Job("31", 0)
	writeNodeStatus(t, outside, 2, "n3", OutcomeSuccess, 0, PhaseResults)
	if err := os.Symlink(outside.Node(2, "n3").Path, d.Node(2, "n3").Path); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(d.Nodes(), "scratch"), 0o755)
	os.WriteFile(filepath.Join(d.Nodes(), ".tmp-123"), nil, 0o644) // a file: not a folder at all
	return l, d
}

// Folders that are not the job's nodes (a link, a rank beyond job.json's world, a second
// folder for a rank) were counted by collect, jobs and submit --wait ("5/3 nodes
// reported"): ListNodes decides once which folders are the job's, and says why the others
// are not.
func TestListNodesLeavesOutStrays(t *testing.T) {
	_, d := strayJob(t)
	j, err := ReadJob(d.JobFile())
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.ListNodes(j)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range got.Nodes {
		names = append(names, fmt.Sprintf("%s=%d/%s", n.Name, n.Rank, n.Host))
	}
	if strings.Join(names, " ") != "0-n1=0/n1 1-n2=1/n2" {
		t.Errorf("nodes %v", names)
	}
	want := []string{
		"nodes/1-evil: a second folder for rank 1; job.json says rank 1 ran on n2, so nodes/1-n2 counts and this one does not",
		"nodes/2-n3: a symbolic link; a node folder is never a link (it may lead outside the job folder): not counted",
		"nodes/99999-x: rank 99999 is beyond the job's 3 nodes (job.json): not counted",
		"nodes/scratch: not a node folder (node folders are named <rank>-<host>): not counted",
	}
	var stray []string
	for _, s := range got.Stray {
		stray = append(stray, s.String())
	}
	if strings.Join(stray, "\n") != strings.Join(want, "\n") {
		t.Errorf("stray:\n%s\nwant:\n%s", strings.Join(stray, "\n"), strings.Join(want, "\n"))
	}
	// Without job.json, no host decides between two folders of one rank: neither counts.
	got, _ = d.ListNodes(nil)
	names = names[:0]
	for _, n := range got.Nodes {
		names = append(names, n.Name)
	}
	if strings.Join(names, " ") != "0-n1 99999-x" {
		t.Errorf("nodes without job.json %v", names)
	}
	if s := got.Stray[0].String(); s != "nodes/1-evil: more than one folder for rank 1 (1-evil, 1-n2), and job.json does not say which host ran it: none counts" {
		t.Errorf("stray[0] = %s", s)
	}
}

// jobs and submit --wait count what collect counts: the job's own node folders.
func TestProgressAndOverviewLeaveOutStrays(t *testing.T) {
	l, d := strayJob(t)
	var nodes []string
	for _, p := range d.Progress() {
		nodes = append(nodes, p.Node)
	}
	if strings.Join(nodes, " ") != "0-n1 1-n2" {
		t.Errorf("Progress: %v", nodes)
	}
	if n := d.NodeFolders(); n != 2 {
		t.Errorf("NodeFolders = %d, want 2", n)
	}
	if s := Summary(d.Progress(), 3); s != "2/3 nodes reported: 1 failure, 1 success" {
		t.Errorf("Summary = %q", s)
	}
	o, err := l.Overview(context.Background(), 0, nil, time.Now())
	if err != nil || len(o) != 1 {
		t.Fatal(o, err)
	}
	if o[0].Nodes != 3 || o[0].Reported != 2 || o[0].State != JobFailed ||
		o[0].Outcome != "1 of 3 nodes failed (exit 3); 1 never reported; 4 folders in nodes/ are not the job's (benchctl collect names them)" {
		t.Errorf("overview %+v", o[0])
	}
	err = Judge(d, d.Progress(), 3, "COMPLETED")
	if err == nil || !strings.Contains(err.Error(), "with 2 of 3 nodes reporting") {
		t.Errorf("Judge = %v", err)
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

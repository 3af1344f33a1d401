//go:build linux

package collect

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// A node.json that is a link, a FIFO or not JSON is a node without a record, and says why;
// collect neither hangs nor fails.
func TestHostileNodeRecords(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "9", 4)
	csv := "model,performance,metric,status\nm,10,x,SUCCESS\n"
	for r := range 4 {
		resultstest.WriteNode(t, job, r, jobdir.OutcomeSuccess, csv)
	}
	jobdirtest.NodeRecord(t, resultstest.NodeOf(job, 0), record(0, "k"))
	if err := os.Symlink(resultstest.NodeOf(job, 0).NodeRecord(), resultstest.NodeOf(job, 1).NodeRecord()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(resultstest.NodeOf(job, 2).NodeRecord(), 0o644); err != nil {
		t.Fatal(err)
	}
	jobdirtest.File(t, resultstest.NodeOf(job, 3).NodeRecord(), []byte(`{"version":1,"machine":`+strings.Repeat("[", 300)))
	col, err := noHangCollect(t, shared)
	if err != nil {
		t.Fatal(err)
	}
	nr := col.Summary.NodeRecords
	if nr.Nodes != 1 || nr.WithoutCount != 3 {
		t.Fatalf("%+v", nr)
	}
	for i, want := range []string{"symbolic link", "FIFO", "node.json"} {
		if !strings.Contains(nr.Without[i].Why, want) {
			t.Errorf("rank %d: %q, want it to say %q", nr.Without[i].Rank, nr.Without[i].Why, want)
		}
	}
	if len(nr.Differs) != 0 {
		t.Errorf("one record differs from nothing: %+v", nr.Differs)
	}
}

func noHangCollect(t *testing.T, shared string) (*Collection, error) {
	t.Helper()
	type res struct {
		c   *Collection
		err error
	}
	done := make(chan res, 1)
	go func() {
		c, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "9", Attempt: -1})
		done <- res{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-timeAfter(60):
		t.Fatal("collect hung on a node.json")
		return nil, nil
	}
}

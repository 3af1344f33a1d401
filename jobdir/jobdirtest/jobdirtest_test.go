package jobdirtest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// What the fixture writes, jobdir reads back as written, at the paths the Layout computes.
func TestWrittenFoldersReadBack(t *testing.T) {
	d := jobdir.Layout{Shared: t.TempDir()}.Job("42", 2)
	j := NewJob(t, "42", []string{"a", "b"}, map[string]any{"name": "m", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv"}}})
	Job(t, d, j)
	if j.Version != jobdir.JobVersion {
		t.Errorf("version %d, want %d", j.Version, jobdir.JobVersion)
	}
	got, err := jobdir.ReadJob(d.JobFile())
	if err != nil || got.Job != "42" || got.WorldSize() != 2 || got.Manifest.Name != "m" || len(got.Manifest.Benchmarks) != 1 {
		t.Fatalf("job.json read back as %+v (%v)", got, err)
	}
	old := NewJob(t, "42", nil, nil)
	old.Version = 1
	Job(t, d, old)
	if got, err := jobdir.ReadJob(d.JobFile()); err != nil || got.Version != 1 {
		t.Fatalf("an older version was not kept: %+v (%v)", got, err)
	}

	n := d.Node(1, "b")
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &jobdir.Status{Version: 1, Job: "42", Rank: 1, Host: "b", Outcome: jobdir.OutcomeSuccess, FinishedAt: &end}
	Status(t, n, st)
	if got, err := jobdir.ReadStatus(n.Status()); err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("status.json read back as %+v (%v), want %+v", got, err, st)
	}
	Result(t, n, "b", "b.csv", []byte("model,performance\n"))
	Log(t, n, "b", []byte("performance: 1 x\n"))
	for _, p := range []string{filepath.Join(n.Results("b"), "b.csv"), n.Log("b")} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	ents, _ := os.ReadDir(n.Path)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".jobdirtest" {
			t.Errorf("a temp file was left: %s", e.Name())
		}
	}
	if a := At(d.Path); a.JobID != "42" || a.Attempt != 2 || a.Path != d.Path {
		t.Errorf("At = %+v", a)
	}
}

package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// writeToolsJob is writeJob with tools in job.json's manifest and tags on the benchmark.
func writeToolsJob(t *testing.T, shared string, world int, tools []string) string {
	t.Helper()
	nodes := make([]string, world)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("h%d", i)
	}
	m := map[string]any{"name": "t", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv", "tags": []string{"pyt", "echo"}}}}
	if tools != nil {
		m["tools"] = tools
	}
	j := jobdirtest.NewJob(t, "1", nodes, m)
	return jobdirtest.Job(t, jobdir.Layout{Shared: shared}.Job("1", 0), j).Path
}

// An output folder that a co-writer swapped for a link to a folder elsewhere is not listed
// (nothing of the other folder is named), and the node's entry says why.
func TestArtefactsOfALinkedFolder(t *testing.T) {
	job := writeToolsJob(t, t.TempDir(), 1, []string{"x"})
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "")
	res := nodeOf(job, 0).Results("b")
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "private.key"), []byte("k"), 0o600)
	if err := os.Remove(res); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, res); err != nil {
		t.Fatal(err)
	}
	s := aggregate(t, job)
	a := s.Benchmarks[0].Artefacts
	if len(a) != 1 || len(a[0].Files) != 0 || !strings.Contains(a[0].Problem, "nodes/0-h0/results/b") || !strings.Contains(a[0].Problem, "link") {
		t.Fatalf("%+v", a)
	}
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(s)
	if strings.Contains(buf.String(), "private.key") {
		t.Errorf("summary.json names a file outside the job folder")
	}
}

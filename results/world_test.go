package results

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// A job.json or status claiming a world of two billion made collect allocate a record per
// claimed rank until it died: the claim is now checked against the host list and the node
// folders, and the mismatch reported.
func TestHostileWorldIsBounded(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(t *testing.T) string
		expected int
		problem  string
	}{
		{"job.json claims two billion", func(t *testing.T) string {
			job := writeJob(t, t.TempDir(), "1", 2)
			rewriteJobWorld(t, job, 2000000000)
			writeNode(t, job, 0, "success", "model,performance\nb,1\n")
			writeNode(t, job, 1, "success", "model,performance\nb,1\n")
			return job
		}, 2, "job.json says the job has 2000000000 nodes, but it lists 2 hosts and the node folders go up to rank 1 (2 folders); counting 2 nodes"},
		{"job.json backed by its host list: a node that never started is missing", func(t *testing.T) string {
			job := writeJob(t, t.TempDir(), "1", 4)
			for r := range 3 {
				writeNode(t, job, r, "success", "model,performance\nb,1\n")
			}
			return job
		}, 4, ""},
		{"no job.json, a status claims two billion", func(t *testing.T) string {
			return twoNodesWithoutJobJSON(t, 2000000000, 2000000000)
		}, 2, "the status files say the job has 2000000000 nodes, but the node folders go up to rank 1 (2 folders); counting 2 nodes"},
		{"no job.json, the statuses disagree", func(t *testing.T) string {
			return twoNodesWithoutJobJSON(t, 2, 3000)
		}, 2, "the status files disagree on the job's size (2 to 3000 nodes)"},
		{"no job.json, statuses agree on one more node than the folders", func(t *testing.T) string {
			return twoNodesWithoutJobJSON(t, 3, 3)
		}, 3, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := c.setup(t)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			s := aggregate(t, job)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("collect allocated %d MiB for a 2-node folder", grew>>20)
			}
			if s.Nodes.Expected != c.expected {
				t.Errorf("expected nodes %d, want %d", s.Nodes.Expected, c.expected)
			}
			all := strings.Join(s.Problems, "\n")
			if c.problem != "" && !strings.Contains(all, c.problem) {
				t.Errorf("problems:\n%s\nwant %q", all, c.problem)
			}
			if c.problem == "" && strings.Contains(all, "counting") {
				t.Errorf("an honest world was doubted:\n%s", all)
			}
		})
	}
}

// rewriteJobWorld sets job.json's world, leaving its host list.
func rewriteJobWorld(t *testing.T, job string, world int) {
	t.Helper()
	p := jobdirtest.At(job).JobFile()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), `"world":`)
	j := i + strings.IndexAny(string(data[i:]), ",}")
	os.WriteFile(p, []byte(string(data[:i])+fmt.Sprintf(`"world":%d`, world)+string(data[j:])), 0o644)
}

// twoNodesWithoutJobJSON is a job folder with nodes 0 and 1, whose status files claim the
// worlds given, and no job.json.
func twoNodesWithoutJobJSON(t *testing.T, world0, world1 int) string {
	t.Helper()
	job := writeJob(t, t.TempDir(), "1", 2)
	os.Remove(jobdirtest.At(job).JobFile())
	for rank, w := range []int{world0, world1} {
		writeNode(t, job, rank, "success", "model,performance\nb,1\n")
		writeStatusWorld(t, job, rank, w)
	}
	return job
}

// writeStatusWorld makes a node's status.json (written by writeNode) claim a world.
func writeStatusWorld(t *testing.T, job string, rank, world int) {
	t.Helper()
	nd := nodeOf(job, rank)
	data, err := os.ReadFile(nd.Status())
	if err != nil {
		t.Fatal(err)
	}
	var st jobdir.Status
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	st.World = world
	jobdirtest.Status(t, nd, &st)
}

package collect

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// One stray folder with a huge rank (nodes/4194000-x) made every benchmark keep a state
// byte per rank up to it, and backed a large world claim, so that collect recorded four
// million missing nodes: per-rank memory now follows the folders that exist.
func TestStrayHighRankFolderIsBounded(t *testing.T) {
	job := resultstest.WriteJob(t, t.TempDir(), "1", 2)
	benches := make([]any, 200)
	for i := range benches {
		benches[i] = map[string]any{"name": fmt.Sprintf("b%d", i), "results": "b.csv"}
	}
	j := jobdirtest.NewJob(t, "1", []string{"h0", "h1"}, map[string]any{"name": "t", "benchmarks": benches})
	j.Version, j.World = 1, 2000000000
	jobdirtest.Job(t, jobdirtest.At(job), j)
	for _, name := range []string{"0-h0", "1-h1", "4194000-x"} {
		os.MkdirAll(jobdirtest.At(job).NodeNamed(name).Path, 0o755)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := resultstest.Aggregate(t, job)
	if _, err := WriteOutputs(jobdir.Dir{Path: job}, s, results.PerfTable(s)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("collect allocated %d MiB for 3 node folders", grew>>20)
	}
	if s.Nodes.Expected != 2 {
		t.Errorf("expected nodes %d, want 2: a stray folder backed the claim", s.Nodes.Expected)
	}
	all := strings.Join(s.Problems, "\n")
	if !strings.Contains(all, "job.json says the job has 2000000000 nodes, but it lists 2 hosts and the node folders go up to rank 4194000 (3 folders); counting 2 nodes") ||
		!strings.Contains(all, "node folders go up to rank 4194000, but job.json says the job has 2 nodes") {
		t.Errorf("problems:\n%s", all)
	}
}

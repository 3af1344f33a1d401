package collect

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// perf.csv's launcher column is the launcher the benchmark named (madengine's column), and
// benchctl where it named none.
func TestPerfLauncherIsTheBenchmarks(t *testing.T) {
	for _, c := range []struct{ launcher, want string }{{"", "benchctl"}, {"deepspeed", "deepspeed"}, {"torchrun", "torchrun"}} {
		shared := t.TempDir()
		b := map[string]any{"name": "b", "results": "b.csv", "tags": []string{"pyt"}}
		if c.launcher != "" {
			b["launcher"] = c.launcher
		}
		j := jobdirtest.NewJob(t, "1", []string{"h0"}, map[string]any{"name": "t", "benchmarks": []any{b}})
		job := jobdirtest.Job(t, jobdir.Layout{Shared: shared}.Job("1", 0), j).Path
		resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nb,1,u\n")
		col, err := Collect(t.Context(), CollectOptions{SharedDir: shared, JobID: "1", Attempt: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := col.Perf.Rows[0][col.Perf.Col("launcher")]; got != c.want {
			t.Errorf("launcher %q: perf.csv says %q, want %q", c.launcher, got, c.want)
		}
	}
}

// perf.csv's tags name the tools after the benchmark's tags, in the order they stacked, so
// that a profiled run is not taken for a plain one: its row does not meet an unprofiled
// baseline row (relative_change), and does meet a profiled one.
func TestPerfTagsNameTheTools(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteToolsJob(t, shared, 1, []string{"rocprofv3", "rpd"})
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nb,120,u\n")
	col, err := Collect(t.Context(), CollectOptions{SharedDir: shared, JobID: "1", Attempt: -1})
	if err != nil {
		t.Fatal(err)
	}
	if c := col.Perf.Col("tags"); col.Perf.Rows[0][c] != "pyt,echo,rocprofv3,rpd" {
		t.Fatalf("tags %q", col.Perf.Rows[0][c])
	}
	if c := col.Perf.Col("args"); col.Perf.Rows[0][c] != "" {
		t.Errorf("args %q", col.Perf.Rows[0][c])
	}
	plain := filepath.Join(t.TempDir(), "perf.csv")
	os.WriteFile(plain, []byte("model,metric,tags,performance\nb,u,\"pyt,echo\",100\n"), 0o644)
	profiled := filepath.Join(t.TempDir(), "perf.csv")
	os.WriteFile(profiled, []byte("model,metric,tags,performance\nb,u,\"['pyt', 'echo', 'rocprofv3', 'rpd']\",100\n"), 0o644)
	for _, c := range []struct {
		base, want string
	}{{plain, ""}, {profiled, "20.00"}} {
		col, err := Collect(t.Context(), CollectOptions{SharedDir: shared, JobID: "1", Attempt: -1, Baseline: c.base})
		if err != nil {
			t.Fatal(err)
		}
		if got := col.Perf.Rows[0][col.Perf.Col("relative_change")]; got != c.want {
			t.Errorf("against %s: relative_change %q, want %q", c.base, got, c.want)
		}
	}
}

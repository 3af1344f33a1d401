package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/results/internal/resultstest"
)

func TestCollectWithABaseline(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "1", 1)
	resultstest.WriteNode(t, job, 0, "success", "model,performance,metric\nb,120,x\n")
	base := filepath.Join(t.TempDir(), "perf.csv")
	os.WriteFile(base, []byte("model,metric,performance\nb,x,100\n"), 0o644)
	col, err := Collect(t.Context(), CollectOptions{SharedDir: shared, JobID: "1", Attempt: -1, Baseline: base})
	if err != nil {
		t.Fatal(err)
	}
	if c := col.Perf.Col("relative_change"); col.Perf.Rows[0][c] != "20.00" {
		t.Fatalf("relative_change %q", col.Perf.Rows[0][c])
	}
	if _, err := Collect(t.Context(), CollectOptions{SharedDir: shared, JobID: "1", Attempt: -1, Baseline: filepath.Join(t.TempDir(), "none.csv")}); err == nil ||
		!strings.Contains(err.Error(), "reading the baseline") {
		t.Fatalf("a missing baseline: %v", err)
	}
}

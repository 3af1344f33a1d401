package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyBaseline(t *testing.T) {
	perf := &Table{Header: []string{"model", "metric", "batch_size", "performance", "relative_change"}, Rows: [][]string{
		{"m", "tok/s", "8", "110", ""},
		{"m", "tok/s", "16", "150", ""},
		{"m", "latency", "", "9", ""},
		{"new", "tok/s", "", "5", ""},
		{"m", "tok/s", "32", "x", ""},
	}}
	base, err := ParseCSV("base.csv", []byte("model,n_gpus,metric,batch_size,performance,status\nm,8,tok/s,8,100,SUCCESS\nm,8,tok/s,16,200,SUCCESS\nm,8,latency,,10,SUCCESS\nm,8,tok/s,32,1,SUCCESS\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := ApplyBaseline(perf, base); n != 3 {
		t.Errorf("matched %d rows, want 3", n)
	}
	var got []string
	for _, r := range perf.Rows {
		got = append(got, r[4])
	}
	if strings.Join(got, "|") != "10.00|-25.00|-10.00||" {
		t.Fatalf("relative_change %q", got)
	}
}

func TestCollectWithABaseline(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "1", 1)
	writeNode(t, job, 0, "success", "model,performance,metric\nb,120,x\n")
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

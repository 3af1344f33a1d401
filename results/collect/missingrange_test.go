package collect

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// A job.json whose world and host list agree on two million nodes, with only two node
// folders, made collect write a missing-node record per rank per benchmark (two million
// times fifty, with a state byte each) until it was killed for memory. The ranks that left
// no folder are now one range per gap between folders: the cost follows the folders.
func TestMissingRanksAreOneRange(t *testing.T) {
	const world, benches = 2000000, 50
	shared := t.TempDir()
	job := jobdir.Layout{Shared: shared}.Job("1", 0).Path
	host := func(r int) string { return strconv.FormatInt(int64(r), 36) } // short: job.json must stay under 16 MiB
	writeHugeJob(t, job, world, benches, host)
	csv := "model,performance,metric\nm,1,x\n"
	for r := range 2 {
		resultstest.WriteNodeBenches(t, job, r, host(r), benches, csv)
	}
	runtime.GC()
	stop := heapGuard(1 << 30) // the code before the fix passed it within seconds
	start := time.Now()
	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "1", Attempt: -1,
		Aggregate: results.AggregateOptions{Now: resultstest.FixedNow}})
	took, peak := time.Since(start), stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("collect: %v, peak heap in use %d MiB", took.Round(time.Millisecond), peak>>20)
	if peak > 256<<20 {
		t.Errorf("peak heap %d MiB, over 256 MiB", peak>>20)
	}
	s := col.Summary
	if n := s.Nodes; n.Expected != world || n.Missing != world-2 || n.Failed != world-2 || n.Reported != 2 || n.Succeeded != 2 {
		t.Errorf("nodes %+v", n)
	}
	const label, reason = "ranks 2-1999999", "no status: 1999998 nodes never reported (no folders nodes/2-* to nodes/1999999-*)"
	if f := s.NodeFailures; len(f) != 1 || f[0].Label() != label || f[0].Reason != reason || f[0].Outcome != "missing" ||
		f[0].Rank != 2 || f[0].LastRank != world-1 || f[0].Nodes() != world-2 {
		t.Fatalf("node failures %s", short(f))
	}
	if len(s.Benchmarks) != benches {
		t.Fatalf("%d benchmarks", len(s.Benchmarks))
	}
	note := "1999998 of 2000000 nodes failed: " + label + " (" + reason + ")"
	for _, b := range s.Benchmarks {
		if b.Status != results.StatusFailure || b.Reason != note || len(b.Failed) != 1 || b.Winner == nil {
			t.Fatalf("benchmark %s: %s %s, failed %s", b.Name, b.Status, short(b.Reason), short(b.Failed))
		}
	}
	var fe *results.FailedError
	if err := s.Err(); s.Status != results.StatusFailure || !errors.As(err, &fe) || fe.ExitCode() != 3 {
		t.Errorf("status %s, Err() = %v: missing nodes must be a failure (exit 3)", s.Status, err)
	}
	st, fn := col.Perf.Col(results.ColStatus), col.Perf.Col("benchctl_failed_nodes")
	if len(col.Perf.Rows) != benches {
		t.Errorf("perf.csv has %d rows", len(col.Perf.Rows))
	}
	for _, r := range col.Perf.Rows {
		if r[st] != results.StatusFailure || r[fn] != label+" ("+reason+")" || r[col.Perf.Col("nnodes")] != "2000000" {
			t.Fatalf("perf.csv row %s", short(r))
		}
	}
	for name, want := range map[string][]string{
		jobdir.SummaryFile: {reason},
		jobdir.ReportFile:  {label, "never reported: 1999998", "Failed nodes (1999998)", "1999998 never reported"},
		jobdir.PerfFile:    {label},
	} {
		data, err := os.ReadFile(filepath.Join(job, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 2<<20 {
			t.Errorf("%s is %d KiB", name, len(data)>>10)
		}
		for _, w := range want {
			if !strings.Contains(string(data), w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
		if name != jobdir.SummaryFile {
			continue
		}
		var got results.Summary
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if f := got.NodeFailures; len(f) != 1 || f[0].Rank != 2 || f[0].LastRank != world-1 || got.Nodes.Missing != world-2 {
			t.Errorf("summary.json: nodes %+v, node failures %s", got.Nodes, short(f))
		}
		for _, b := range got.Benchmarks {
			if len(b.Failed) != 1 || b.Failed[0].LastRank != world-1 {
				t.Fatalf("summary.json: benchmark %s failed %s", b.Name, short(b.Failed))
			}
		}
	}
}

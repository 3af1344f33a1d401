package results

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// A MAD model that every node skipped for its GPU architecture (skip_gpu_arch) is SKIPPED
// in the summary and perf.csv, and not a failure of the job; a skip beside a failure is not.
func TestSkippedForTheGPUArchitecture(t *testing.T) {
	why := jobdir.SkipArchPrefix + ": skip_gpu_arch gfx90a matches this node's GPUs (gfx90a, AMD Instinct MI250X)"
	skipNode := func(t *testing.T, job string, rank int, outcome, err string) {
		writeNode(t, job, rank, "success", "")
		p := nodeOf(job, rank).Status()
		st, _ := jobdir.ReadStatus(p)
		st.Benchmarks = []jobdir.BenchmarkStatus{{Name: "b", Outcome: outcome, Error: err}}
		if outcome == jobdir.OutcomeFailure {
			st.Outcome, st.ExitCode = jobdir.OutcomeFailure, 3
		}
		data, _ := json.Marshal(st)
		os.WriteFile(p, data, 0o644)
	}
	job := writeJob(t, t.TempDir(), "1", 2)
	skipNode(t, job, 0, jobdir.OutcomeSkipped, why)
	skipNode(t, job, 1, jobdir.OutcomeSkipped, why)
	s := aggregate(t, job)
	b := s.Benchmarks[0]
	if b.Status != StatusSkipped || b.Reason != why || s.Status != StatusSuccess || s.Err() != nil {
		t.Fatalf("benchmark %s (%s), job %s, err %v", b.Status, b.Reason, s.Status, s.Err())
	}
	perf := PerfTable(s)
	if col := perf.Col("status"); col < 0 || perf.Rows[0][col] != StatusSkipped {
		t.Fatalf("perf.csv: %v / %v", perf.Header, perf.Rows)
	}

	job = writeJob(t, t.TempDir(), "2", 2)
	skipNode(t, job, 0, jobdir.OutcomeSkipped, why)
	skipNode(t, job, 1, jobdir.OutcomeFailure, "exited with code 1")
	if s := aggregate(t, job); s.Benchmarks[0].Status != StatusFailure || s.Err() == nil {
		t.Fatalf("a skip beside a failure: %s", s.Benchmarks[0].Status)
	}

	// Benchmarks not run because the job aborted stay failures, as before.
	job = writeJob(t, t.TempDir(), "3", 1)
	skipNode(t, job, 0, jobdir.OutcomeSkipped, "not run: benchmark a failed on h0 (onFailure: abort)")
	if s := aggregate(t, job); s.Benchmarks[0].Status != StatusFailure || !strings.Contains(s.Benchmarks[0].Reason, "no node produced a result") {
		t.Fatalf("an abort's skip: %s %s", s.Benchmarks[0].Status, s.Benchmarks[0].Reason)
	}
}

package collect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// A node whose benchmark was stopped because another node failed shows the abort's reason
// (naming the failing rank), not "did not finish (outcome "aborted")".
func TestCollectAbortedBenchmarkNamesTheFailingRank(t *testing.T) {
	const reason = "aborted: rank 2 (h2) failed benchmark b: exited with code 1"
	end := t0.Add(time.Minute)
	aborted := &jobdir.Status{Version: 1, Rank: 1, Host: "h1", World: 3, Outcome: jobdir.OutcomeFailure, ExitCode: 3, Error: reason,
		StartedAt: t0, FinishedAt: &end,
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeAborted, ExitCode: 143, Error: reason, StartedAt: t0, FinishedAt: &end}}}
	shared := threeNodeJob(t, aborted)
	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "77", Attempt: -1, Partial: true,
		Scheduler: sched("FAILED", false, nil)})
	if err != nil {
		t.Fatal(err)
	}
	b := col.Summary.Benchmarks[0]
	if len(b.Failed) != 1 || b.Failed[0].Outcome != jobdir.OutcomeAborted || b.Failed[0].Reason != reason {
		t.Fatalf("failed %+v", b.Failed)
	}
	if strings.Contains(b.Reason, "did not finish") || !strings.Contains(b.Reason, "rank 2 (h2) failed benchmark b") {
		t.Errorf("benchmark reason %q", b.Reason)
	}
}

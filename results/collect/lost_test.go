package collect

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
)

// A node whose status still says running in a job that Slurm says has ended is lost: a
// FAILURE that names its last record, with or without --partial.
func TestCollectLostNode(t *testing.T) {
	const want = "lost (last status 2026-01-01T00:03:00Z, benchmark b started): status.json still says running, " +
		"but Slurm says the job is COMPLETED (sacct); the node stopped without recording its end"
	for _, partial := range []bool{false, true} {
		shared := threeNodeJob(t, nil)
		col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "77", Attempt: -1, Partial: partial,
			Scheduler: schedulerFunc(func(context.Context, string) (jobdir.SchedulerState, error) {
				return jobdir.SchedulerState{Known: true, State: "COMPLETED", Source: "sacct", Scheduler: "Slurm"}, nil
			})})
		if err != nil {
			t.Fatalf("partial=%v: %v", partial, err)
		}
		s := col.Summary
		if len(s.NodeFailures) != 1 || s.NodeFailures[0].Outcome != jobdir.OutcomeLost || s.NodeFailures[0].Reason != want {
			t.Fatalf("partial=%v: node failures %+v", partial, s.NodeFailures)
		}
		if s.Nodes.Running != 0 || len(s.Running) != 0 || s.Nodes.Failed != 1 {
			t.Errorf("partial=%v: nodes %+v running %v", partial, s.Nodes, s.Running)
		}
		b := s.Benchmarks[0]
		if len(b.Failed) != 1 || b.Failed[0].Reason != want || !strings.Contains(b.Reason, "1-h1 (lost (last status") {
			t.Errorf("partial=%v: benchmark %s failed %+v", partial, b.Reason, b.Failed)
		}
		notSuccess(t, col)
		if fe := new(results.FailedError); errors.As(s.Err(), &fe) && fe.Unfinished {
			t.Errorf("partial=%v: a lost node is a failure, not an unfinished job: %v", partial, s.Err())
		}
	}
}

// A status without any time: the status file's modification time is the last sign of life.
func TestCollectLostNodeWithoutTimes(t *testing.T) {
	shared := threeNodeJob(t, &jobdir.Status{Version: 1, Rank: 1, Host: "h1", Outcome: jobdir.OutcomeRunning})
	mtime := time.Date(2025, 5, 5, 5, 5, 5, 0, time.UTC)
	os.Chtimes(jobdir.Layout{Shared: shared}.Job("77", 0).NodeNamed("1-h1").Status(), mtime, mtime)
	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "77", Attempt: -1, Scheduler: sched("CANCELLED", false, nil)})
	if err != nil {
		t.Fatal(err)
	}
	f := col.Summary.NodeFailures
	if len(f) != 1 || !strings.HasPrefix(f[0].Reason, "lost (last status 2025-05-05T05:05:05Z, status.json last written): ") ||
		!strings.Contains(f[0].Reason, "Slurm says the job is CANCELLED;") {
		t.Fatalf("node failures %+v", f)
	}
	notSuccess(t, col)
}

// --partial shows a node that is still running as running, and never says SUCCESS for a
// job it is part of, even when its benchmark already succeeded.
func TestCollectPartialNeverSuccess(t *testing.T) {
	done := t0.Add(time.Minute)
	benchDone := &jobdir.Status{Version: 1, Rank: 1, Host: "h1", World: 3, Outcome: jobdir.OutcomeRunning, StartedAt: t0,
		Phases:     []jobdir.PhaseStatus{{Name: jobdir.PhaseResults, StartedAt: done, Outcome: jobdir.OutcomeRunning}},
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeSuccess, StartedAt: t0, FinishedAt: &done}}}
	cases := []struct {
		name      string
		stuck     *jobdir.Status
		scheduler jobdir.Scheduler
		reason    string // the error's
	}{
		{name: "no scheduler", reason: "job 77 has not finished: b: partial: 1 of 3 nodes still running"},
		{name: "slurm says running", scheduler: sched("RUNNING", true, nil), reason: "job 77 has not finished: b: partial: 1 of 3 nodes still running"},
		{name: "slurm forgot the job, no accounting", scheduler: sched("", false, nil), reason: "has not finished"},
		{name: "benchmark done, node still running", stuck: benchDone, scheduler: sched("RUNNING", true, nil),
			reason: "job 77 has not finished: 1 node has not finished (1-h1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := threeNodeJob(t, c.stuck)
			col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "77", Attempt: -1, Partial: true, Scheduler: c.scheduler})
			if err != nil {
				t.Fatal(err)
			}
			s := col.Summary
			if len(s.Running) != 1 || s.Running[0].Rank != 1 || len(s.NodeFailures) != 0 {
				t.Fatalf("running %+v failures %+v", s.Running, s.NodeFailures)
			}
			if c.stuck == nil {
				notSuccess(t, col)
			} else if s.Status == results.StatusSuccess {
				t.Error("summary status SUCCESS with a node still running")
			}
			var fe *results.FailedError
			if err := s.Err(); !errors.As(err, &fe) || !fe.Unfinished || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("Err() = %v, want an unfinished job: %q", err, c.reason)
			}
		})
	}
}

// notSuccess fails the test when anything of the collection says SUCCESS: a job with a node
// that is still running, or lost, is not a success, with or without --partial.
func notSuccess(t *testing.T, col *Collection) {
	t.Helper()
	s := col.Summary
	if s.Status == results.StatusSuccess {
		t.Errorf("summary status SUCCESS")
	}
	for _, b := range s.Benchmarks {
		if b.Status == results.StatusSuccess {
			t.Errorf("benchmark %s SUCCESS", b.Name)
		}
		for _, r := range b.Rows {
			if r.Status == results.StatusSuccess {
				t.Errorf("row %s SUCCESS", r.Model)
			}
		}
	}
	st := col.Perf.Col(results.ColStatus)
	for _, r := range col.Perf.Rows {
		if r[st] == results.StatusSuccess {
			t.Errorf("perf.csv row %q SUCCESS", r)
		}
	}
	var fe *results.FailedError
	if err := s.Err(); !errors.As(err, &fe) || fe.ExitCode() != 3 {
		t.Errorf("Err() = %v, want a *FailedError (exit 3)", err)
	}
}

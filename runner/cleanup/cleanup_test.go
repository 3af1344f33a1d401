package cleanup

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/workload/engine"
)

// fakeCleaner lists containers of two attempts and removes them, one with an error.
type fakeCleaner struct {
	ContainerEngine
	items   []container.Summary
	removed []string
	failID  string
}

func (f *fakeCleaner) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{Items: f.items}, nil
}
func (f *fakeCleaner) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	if id == f.failID {
		return client.ContainerRemoveResult{}, errors.New("device or resource busy")
	}
	f.removed = append(f.removed, id)
	return client.ContainerRemoveResult{}, nil
}

func summary(id, attempt, rank string) container.Summary {
	return container.Summary{ID: id, Names: []string{"/benchctl-77-" + attempt + "-r" + rank + "-b"}, State: "running",
		Labels: map[string]string{LabelJob: "77", LabelAttempt: attempt, LabelRank: rank, LabelBenchmark: "b"}}
}

func writeStatus(t *testing.T, shared, jobDir string, rank int, host, outcome string) string {
	t.Helper()
	id, attempt := jobdir.SplitName(jobDir)
	nd := jobdir.Layout{Shared: shared}.Job(id, attempt).Node(rank, host)
	jobdirtest.Mkdir(t, nd.Path)
	s := &Status{Version: jobdir.StatusVersion, Job: "77", Rank: rank, Host: host, World: 2, Outcome: outcome, StartedAt: time.Now().Add(-time.Hour).UTC(),
		Phases:     []PhaseStatus{{Name: "run", StartedAt: time.Now().UTC(), Outcome: OutcomeRunning}},
		Benchmarks: []BenchmarkStatus{{Name: "b", Outcome: OutcomeRunning, StartedAt: time.Now().Add(-time.Minute).UTC()}}}
	if outcome != OutcomeRunning {
		now := time.Now().UTC()
		s.FinishedAt = &now
	}
	p := nd.Status()
	if err := jobdir.WriteStatus(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

// benchctl cleanup: every container of the job goes (a failure is reported, not hidden);
// only this host's status files that still say running get an end, in every attempt; a
// FIFO where a status file should be neither hangs nor is touched.
func TestCleanupRemovesContainersAndRecordsLostNodes(t *testing.T) {
	shared := t.TempDir()
	mine := writeStatus(t, shared, "77", 0, "n1", OutcomeRunning)
	other := writeStatus(t, shared, "77", 1, "n2", OutcomeRunning)
	done := writeStatus(t, shared, "77.1", 0, "n1", OutcomeSuccess)
	fifoDir := jobdir.Layout{Shared: shared}.Job("77", 1).Node(1, "n1").Path
	os.MkdirAll(fifoDir, 0o755)
	if err := syscall.Mkfifo(jobdir.Layout{Shared: shared}.Job("77", 1).Node(1, "n1").Status(), 0o644); err != nil {
		t.Fatal(err)
	}
	eng := &fakeCleaner{items: []container.Summary{summary("a", "0", "0"), summary("b", "1", "0"), summary("c", "1", "1")}, failID: "c"}
	res, err := Cleanup(context.Background(), CleanupOptions{Job: "77", SharedDir: shared, Host: "n1", Outcome: jobdir.OutcomeLost, Engine: engine.New(eng)})
	if err == nil || !strings.Contains(err.Error(), "device or resource busy") {
		t.Errorf("a failed remove was not reported: %v", err)
	}
	if len(res.Removed) != 3 || len(eng.removed) != 2 || res.Removed[2].Error == "" {
		t.Errorf("removed %+v (engine: %v)", res.Removed, eng.removed)
	}
	if len(res.Marked) != 1 || res.Marked[0] != mine {
		t.Fatalf("marked %v", res.Marked)
	}
	s, err := jobdir.ReadStatus(mine)
	if err != nil {
		t.Fatal(err)
	}
	if s.Outcome != jobdir.OutcomeLost || s.FinishedAt == nil || s.ExitCode != 1 ||
		!strings.Contains(s.Error, "lost: benchctl on n1 stopped without recording its end (last status ") ||
		s.Benchmarks[0].Outcome != OutcomeFailure || s.Phases[0].Outcome != PhaseFailed {
		t.Errorf("status %+v", s)
	}
	for _, p := range []string{other, done} {
		if st, _ := jobdir.ReadStatus(p); st == nil || (p == other && st.Outcome != OutcomeRunning) || (p == done && st.Outcome != OutcomeSuccess) {
			t.Errorf("%s was changed: %+v", p, st)
		}
	}
	if _, err := Cleanup(context.Background(), CleanupOptions{Job: "77", Outcome: "gone"}); err == nil {
		t.Error("an unknown outcome was accepted")
	}
}

// A cleanup on an engine that does not answer ends within its call timeout (on the bubble's
// clock: exactly).
func TestCleanupWithAHangingEngineIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, err := Cleanup(context.Background(), CleanupOptions{Job: "77", Outcome: jobdir.OutcomeLost, Engine: engine.New(&hangingEngine{}), CallTimeout: 200 * time.Millisecond})
		if err == nil || time.Since(start) > 200*time.Millisecond {
			t.Fatalf("took %v, err %v", time.Since(start), err)
		}
	})
}

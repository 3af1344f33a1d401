package runner

import (
	"context"
	"errors"
	"github.com/benchctl/benchctl/workload/engine"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// hangingEngine is a Docker Engine that stopped answering: every call blocks until its
// context ends. Creating and starting a container work, so that a run gets under way.
type hangingEngine struct {
	ContainerEngine
	mu      sync.Mutex
	calls   []string
	removed bool
	gone    chan struct{} // closed: every call still hanging fails (nil: none ever does)
}

func (e *hangingEngine) note(c string) { e.mu.Lock(); e.calls = append(e.calls, c); e.mu.Unlock() }
func (e *hangingEngine) hang(ctx context.Context, c string) error {
	e.note(c)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-e.gone:
		return errors.New("the engine went away")
	}
}
func (e *hangingEngine) ContainerCreate(context.Context, client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	return client.ContainerCreateResult{ID: "c1"}, nil
}
func (e *hangingEngine) ContainerStart(context.Context, string, client.ContainerStartOptions) (client.ContainerStartResult, error) {
	return client.ContainerStartResult{}, nil
}
func (e *hangingEngine) ContainerWait(context.Context, string, client.ContainerWaitOptions) client.ContainerWaitResult {
	errc := make(chan error, 1)
	if e.gone != nil {
		go func() { <-e.gone; errc <- errors.New("the engine went away") }()
	}
	return client.ContainerWaitResult{Result: make(chan container.WaitResponse), Error: errc}
}
func (e *hangingEngine) ContainerLogs(ctx context.Context, _ string, _ client.ContainerLogsOptions) (client.ContainerLogsResult, error) {
	return nil, e.hang(ctx, "logs")
}
func (e *hangingEngine) ServerVersion(ctx context.Context, _ client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return client.ServerVersionResult{}, e.hang(ctx, "version")
}
func (e *hangingEngine) ContainerInspect(ctx context.Context, _ string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{}, e.hang(ctx, "inspect")
}
func (e *hangingEngine) ContainerStop(ctx context.Context, _ string, _ client.ContainerStopOptions) (client.ContainerStopResult, error) {
	return client.ContainerStopResult{}, e.hang(ctx, "stop")
}
func (e *hangingEngine) ContainerRemove(ctx context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	if id == "c1" {
		e.mu.Lock()
		e.removed = true
		e.mu.Unlock()
	}
	return client.ContainerRemoveResult{}, e.hang(ctx, "remove "+id)
}
func (e *hangingEngine) ContainerList(ctx context.Context, _ client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{}, e.hang(ctx, "list")
}

var testBudget = budget{stopGrace: 1, cancelGrace: 1, abortGrace: 0, stopSlack: 200 * time.Millisecond,
	waitSlack: 100 * time.Millisecond, diag: 300 * time.Millisecond, remove: 200 * time.Millisecond}

// startHanging starts a container on a hanging engine; the caller closes eng.gone when done,
// so that the log reader, which waits on no context, ends too.
func startHanging(t *testing.T, ctx context.Context, bud budget) (<-chan execResult, *hangingEngine) {
	t.Helper()
	eng := &hangingEngine{gone: make(chan struct{})}
	files := testFiles(t, "b")
	done := make(chan execResult, 1)
	go func() {
		done <- runContainer(ctx, engine.New(eng), Spec{Name: "benchctl-1-0-r0-b", Image: "img", Command: []string{"/b"}}, time.Hour, files, io.Discard, bud, nil)
	}()
	return done, eng
}

// A cancel (SIGTERM) while the engine does not answer: runContainer still returns within
// its budget, having tried diagnostics, the stop and the remove, each bounded. On the
// bubble's clock, so the budget is checked exactly on any machine.
func TestCancelWithAHangingEngineIsBounded(t *testing.T) {
	synctest.Test(t, cancelWithAHangingEngineIsBounded)
}

func cancelWithAHangingEngineIsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done, eng := startHanging(t, ctx, testBudget)
	defer close(eng.gone)
	synctest.Wait() // the container runs, and every call the run made hangs
	start := time.Now()
	cancel()
	res := <-done
	if res.Outcome != OutcomeCancelled {
		t.Errorf("outcome %s", res.Outcome)
	}
	if took := time.Since(start); took > testBudget.cancelTotal() {
		t.Errorf("took %v, budget %v", took, testBudget.cancelTotal())
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if !eng.removed || !strings.Contains(strings.Join(eng.calls, ","), "stop") {
		t.Errorf("calls %v, removed %v", eng.calls, eng.removed)
	}
}

// The default budget of the SIGTERM path fits in Slurm's default KillWait (30 s) with room
// for status.json and closing the job channel.
func TestDefaultCancelBudgetFitsKillWait(t *testing.T) {
	if total := defaultBudget().cancelTotal(); total > 27*time.Second {
		t.Fatalf("the SIGTERM path may take %v; Slurm's KillWait is 30 s", total)
	}
}

// A second signal (Forced) skips what is left of the diagnostics and the stop grace. On the
// bubble's clock: what is left is the remove's bound, exactly.
func TestSecondSignalRemovesAtOnce(t *testing.T) {
	synctest.Test(t, secondSignalRemovesAtOnce)
}

func secondSignalRemovesAtOnce(t *testing.T) {
	slow := testBudget
	slow.diag, slow.cancelGrace = time.Minute, 60
	force := make(chan struct{})
	ctx, cancel := context.WithCancel(WithForce(context.Background(), force))
	done, eng := startHanging(t, ctx, slow)
	defer close(eng.gone)
	synctest.Wait()
	cancel()
	synctest.Wait() // the cleanup is under way: diagnostics hang
	start := time.Now()
	close(force)
	<-done
	if took := time.Since(start); took > slow.remove {
		t.Errorf("took %v after the second signal, more than the remove's bound %v", took, slow.remove)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if !eng.removed {
		t.Error("the container was not removed")
	}
}

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

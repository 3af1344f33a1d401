package runner

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benchctl/benchctl/workload/engine"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
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

package cleanup

import (
	"context"
	"errors"
	"sync"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/workload/engine"
)

// The names runner's tests give the engine's API and status.json's schema.
type (
	ContainerEngine = engine.API
	Status          = jobdir.Status
	PhaseStatus     = jobdir.PhaseStatus
	BenchmarkStatus = jobdir.BenchmarkStatus
)

const (
	OutcomeRunning = jobdir.OutcomeRunning
	OutcomeSuccess = jobdir.OutcomeSuccess
	OutcomeFailure = jobdir.OutcomeFailure
	OutcomeLost    = jobdir.OutcomeLost
	PhaseFailed    = jobdir.PhaseFailed
)

// hangingEngine is a Docker Engine that stopped answering: every call blocks until its
// context ends.
type hangingEngine struct {
	ContainerEngine
	mu    sync.Mutex
	calls []string
	gone  chan struct{} // closed: every call still hanging fails (nil: none ever does)
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
func (e *hangingEngine) ContainerRemove(ctx context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	return client.ContainerRemoveResult{}, e.hang(ctx, "remove "+id)
}
func (e *hangingEngine) ContainerList(ctx context.Context, _ client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{}, e.hang(ctx, "list")
}

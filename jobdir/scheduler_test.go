package jobdir

import (
	"context"
	"errors"
	"os"
	"testing"
)

// fakeScheduler is a Scheduler whose answers are a table: states by job id (a job not
// in it is unknown), errs by job id, and wait for Wait.
type fakeScheduler struct {
	states map[string]SchedulerState
	errs   map[string]error
	wait   func(ctx context.Context, tick func(SchedulerState, error)) (SchedulerState, error)
}

var _ Scheduler = fakeScheduler{}

func (f fakeScheduler) JobState(_ context.Context, id string) (SchedulerState, error) {
	return f.states[id], f.errs[id]
}

func (f fakeScheduler) Wait(ctx context.Context, _ string, tick func(SchedulerState, error)) (SchedulerState, error) {
	return f.wait(ctx, tick)
}

// running and ended are scheduler states as Slurm gives them.
func running(state string) SchedulerState {
	return SchedulerState{Known: true, State: state, Active: true}
}
func ended(state string) SchedulerState { return SchedulerState{Known: true, State: state} }

// A job's submission files (its secret) go only when the scheduler says the job ended: an
// active job (a requeued one reads its secret again) and a job the scheduler does not
// know keep them.
func TestRemoveSubmittedWhenEnded(t *testing.T) {
	for _, c := range []struct {
		name    string
		st      SchedulerState
		removed bool
	}{
		{"completed", ended("COMPLETED"), true},
		{"cancelled", ended("CANCELLED"), true},
		{"running", running("RUNNING"), false},
		{"requeued: pending again", running("PENDING"), false},
		{"unknown to the scheduler", SchedulerState{}, false},
		{"unknown, with a stale state word", SchedulerState{State: "COMPLETED"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := Layout{t.TempDir()}
			os.MkdirAll(l.Submit(), 0o700)
			secret := l.SubmitFiles("tok").Secret
			os.WriteFile(secret, []byte("s"), 0o600)
			if err := l.RecordSubmitted("tok", "100"); err != nil {
				t.Fatal(err)
			}
			removed, err := l.RemoveSubmittedWhenEnded("100", c.st)
			if err != nil || removed != c.removed {
				t.Fatalf("removed %v, %v; want %v", removed, err, c.removed)
			}
			if _, err := os.Stat(secret); errors.Is(err, os.ErrNotExist) != c.removed {
				t.Fatalf("secret exists: %v, want removed %v", err, c.removed)
			}
		})
	}
}

// A state names who says it in messages; one no scheduler knows names none.
func TestSchedulerStateSays(t *testing.T) {
	if got := (SchedulerState{Known: true, State: "RUNNING", Scheduler: "Slurm"}).Says(); got != "Slurm says" {
		t.Errorf("%q", got)
	}
	if got := (SchedulerState{}).Says(); got != "the scheduler says" {
		t.Errorf("%q", got)
	}
}

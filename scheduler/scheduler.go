package scheduler

import (
	"context"
	"errors"

	"github.com/benchctl/benchctl/jobdir"
)

// State is what a scheduler says of a job (jobdir keeps its schema: the job folder's
// readers follow jobs with it).
type State = jobdir.SchedulerState

// Lookup reads one variable of the environment (os.LookupEnv, or a map in tests).
type Lookup = func(string) (string, bool)

// Scheduler is a batch system that starts benchctl's tasks, one per node of a job.
// Implementations are values without state of their own beyond their configuration, safe
// for concurrent use.
type Scheduler interface {
	// Name is the scheduler's name, as Node.Source records it ("slurm", "local").
	Name() string
	// Detect reports whether the environment is one of this scheduler's tasks. It reads
	// variables only; it may be wrong about a garbled environment, which Node then
	// refuses.
	Detect(lookup Lookup) bool
	// Node is this task's node context, read from the environment and checked: a missing,
	// garbled or inconsistent variable is a *ContextError naming it, never a silent
	// default. The Node is complete (Complete has been applied).
	Node(lookup Lookup) (Node, error)
	// JobState is what the scheduler says of a job; one it does not know (or no
	// scheduler at all on this machine) is the zero state and no error.
	JobState(ctx context.Context, jobID string) (jobdir.SchedulerState, error)
	// Wait follows a job until the scheduler no longer lists it as active, telling tick
	// of each state it sees; it ends with ctx.
	Wait(ctx context.Context, jobID string, tick func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error)
}

// ErrNoScheduler is DetectNode's error when no scheduler of the list claims the
// environment (a list without a fallback such as local's).
var ErrNoScheduler = errors.New("no scheduler recognises this environment")

// DetectNode is the node context of this task from the first scheduler, in order, that
// detects its environment (put the fallback last: local claims every environment).
func DetectNode(lookup Lookup, schedulers ...Scheduler) (Node, error) {
	for _, s := range schedulers {
		if s.Detect(lookup) {
			return s.Node(lookup)
		}
	}
	return Node{}, ErrNoScheduler
}

// Any is the schedulers asked in turn about a job, as a reader of the job folder asks who
// knows it (`benchctl jobs`, collect): the first that knows the job answers; when none
// does, the state is unknown, and an error is the first scheduler's that could not be
// asked.
func Any(schedulers ...Scheduler) jobdir.Scheduler { return anyOf(schedulers) }

type anyOf []Scheduler

func (a anyOf) JobState(ctx context.Context, jobID string) (State, error) {
	var first error
	for _, s := range a {
		st, err := s.JobState(ctx, jobID)
		if err == nil && st.Known {
			return st, nil
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return State{}, first
}

// Wait follows the job on the scheduler that knows it; when none does, it returns at once
// with JobState's answer.
func (a anyOf) Wait(ctx context.Context, jobID string, tick func(State, error)) (State, error) {
	for _, s := range a {
		if st, err := s.JobState(ctx, jobID); err == nil && st.Known {
			return s.Wait(ctx, jobID, tick)
		}
	}
	st, err := a.JobState(ctx, jobID)
	if tick != nil {
		tick(st, err)
	}
	return st, err
}

// SharedOutput is a scheduler whose tasks of one step print to one output (srun gathers
// its tasks' stdout): TasksPrinting is how many print to it at once, read from the
// environment (0 or 1: this task alone).
type SharedOutput interface {
	TasksPrinting(lookup Lookup) int
}

// SeveralPrint reports whether this task is one of several printing to one output at
// once, as a scheduler among schedulers says: a command then prints each document on a
// line of its own, so that the interleaved output is one document per line.
func SeveralPrint(lookup Lookup, schedulers ...Scheduler) bool {
	for _, s := range schedulers {
		if so, ok := s.(SharedOutput); ok && so.TasksPrinting(lookup) > 1 {
			return true
		}
	}
	return false
}

// Teller is a scheduler that tells a person its name ("Slurm") and what asking it said,
// briefly (Slurm: each command's message, on one line).
type Teller interface {
	Title() string
	Tell(err error) string
}

// Told is how a person is told that asking s failed with err: s's title and err in its
// words when it is a Teller, else its Name and the error's text.
func Told(s Scheduler, err error) (title, said string) {
	if t, ok := s.(Teller); ok {
		return t.Title(), t.Tell(err)
	}
	return s.Name(), err.Error()
}

// Epilog is a scheduler that runs a command on each node of a job when the job ends
// (Slurm's epilog): EpilogNode reads from that command's environment which job ended and
// on which node, as `benchctl cleanup` needs them; ok is false outside an epilog.
type Epilog interface {
	EpilogNode(lookup Lookup) (job, host string, ok bool)
}

// EpilogNode is the job and node of the first scheduler, in order, whose epilog this is.
func EpilogNode(lookup Lookup, schedulers ...Scheduler) (job, host string, ok bool) {
	for _, s := range schedulers {
		if e, is := s.(Epilog); is {
			if job, host, ok := e.EpilogNode(lookup); ok {
				return job, host, true
			}
		}
	}
	return "", "", false
}

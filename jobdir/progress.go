package jobdir

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/textsafe"
)

// NodeProgress is one node's state while a job runs, from its status.json.
type NodeProgress struct {
	Node     string // folder name, "<rank>-<host>"
	Outcome  string
	Phase    string // the phase in progress, or the last one
	ExitCode int
	Finished *time.Time // when the node recorded its end
}

// Latest is the job's newest attempt, or attempt 0 when no folder exists yet (a job
// still pending).
func (l Layout) Latest(id string) Dir {
	if d, err := l.Find(id, -1); err == nil {
		return d
	}
	return l.Job(id, 0)
}

// Progress reads the status.json of every node folder of the attempt that is the job's
// (ListNodes, with the attempt's job.json), sorted by folder name. A node folder without a
// readable status is left out (collect reports those; NodeFolders counts them).
func (d Dir) Progress() []NodeProgress {
	p, _ := d.progress(d.listNodes())
	return p
}

// listNodes is ListNodes with the attempt's job.json (nil when it cannot be read); an
// unreadable nodes/ is an empty list.
func (d Dir) listNodes() NodeList {
	var r safefile.Reader
	var j *Job
	if data, err := r.ReadNoFollow(d.JobFile(), MaxStatusSize); err == nil {
		var jj Job
		if jj.UnmarshalJSON(data) == nil {
			j = &jj
		}
	}
	l, _ := d.ListNodes(j)
	return l
}

// progress reads the status of every node of l.
func (d Dir) progress(l NodeList) ([]NodeProgress, NodeList) {
	var r safefile.Reader
	var out []NodeProgress
	for _, n := range l.Nodes {
		s, err := ReadStatusWith(&r, d.NodeNamed(n.Name).Status())
		if err != nil {
			continue
		}
		p := NodeProgress{Node: n.Name, Outcome: s.Outcome, ExitCode: s.ExitCode, Finished: s.FinishedAt}
		if len(s.Phases) > 0 {
			p.Phase = s.Phases[len(s.Phases)-1].Name
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, l
}

// NodeFolders counts the attempt's node folders that are the job's (ListNodes), readable
// or not.
func (d Dir) NodeFolders() int { return len(d.listNodes().Nodes) }

// Summary says how many nodes reported and what they are doing, e.g.
// "3/4 nodes reported: 1 image, 2 run".
func Summary(nodes []NodeProgress, world int) string {
	count := map[string]int{}
	for _, n := range nodes {
		k := n.Phase
		if n.Outcome != OutcomeRunning {
			k = n.Outcome
		}
		if k == "" {
			k = "starting"
		}
		count[textsafe.Line(k)]++ // status.json's words, shown by jobs and submit --wait
	}
	parts := make([]string, 0, len(count))
	for k, v := range count {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d/%d nodes reported: %s", len(nodes), world, strings.Join(parts, ", "))
}

// EndedError is a followed job whose nodes did not all succeed; ExitCode is the worst
// node's (2 when the image build failed), 3 when no node says more.
type EndedError struct {
	Msg  string
	Code int
}

func (e *EndedError) Error() string { return e.Msg }

// ExitCode is the job's exit code.
func (e *EndedError) ExitCode() int { return e.Code }

// Judge says how an ended job went from its nodes' statuses: nil when every one of the
// world's nodes succeeded, else an *EndedError.
func Judge(d Dir, nodes []NodeProgress, world int, state string) error {
	code, failed := 0, 0
	for _, n := range nodes {
		if n.Outcome == OutcomeSuccess {
			continue
		}
		failed++
		c := n.ExitCode
		if n.Outcome == OutcomeRunning { // never recorded its end
			c = exitcode.Run
		}
		code = max(code, c)
	}
	if code <= exitcode.Failure {
		code = exitcode.Run
	}
	switch {
	case len(nodes) < world:
		return &EndedError{fmt.Sprintf("job %s ended (%s) with %d of %d nodes reporting; see %s", d.JobID, state, len(nodes), world, d.Path), exitcode.Run}
	case failed > 0:
		return &EndedError{fmt.Sprintf("job %s: %d of %d nodes did not succeed; see %s", d.JobID, failed, world, d.Path), code}
	}
	return nil
}

// Follow watches a submitted job until it ends.
type Follow struct {
	Layout Layout
	JobID  string
	World  int
	// Scheduler is waited on (Scheduler.Wait) until it says the job has ended; every poll
	// may make a progress line.
	Scheduler Scheduler
	// Line is called with a progress line ("job 12 RUNNING: 3/4 nodes reported: 3 run")
	// whenever it changes, and at least once a minute while the job runs.
	Line func(line string, err error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Ended is a followed job at its end.
type Ended struct {
	Dir   Dir
	State string // the scheduler's last state of the job
	// Scheduler is the scheduler's last word when it said the job has ended (the zero
	// value when following stopped first): RemoveSubmittedWhenEnded decides from it.
	Scheduler SchedulerState
	Nodes     []NodeProgress
}

// Run follows the job; the error is the scheduler's, ctx's, or Judge's verdict.
func (f Follow) Run(ctx context.Context) (Ended, error) {
	now := f.Now
	if now == nil {
		now = time.Now
	}
	last, lastAt := "", time.Time{}
	st, err := f.Scheduler.Wait(ctx, f.JobID, func(st SchedulerState, err error) {
		line := fmt.Sprintf("job %s %s: %s", f.JobID, st.State, Summary(f.Layout.Latest(f.JobID).Progress(), f.World))
		if t := now(); line != last || t.Sub(lastAt) >= time.Minute || err != nil {
			if f.Line != nil {
				f.Line(line, err)
			}
			last, lastAt = line, t
		}
	})
	d := f.Layout.Latest(f.JobID)
	e := Ended{Dir: d, State: st.State}
	if err != nil {
		return e, err
	}
	e.Scheduler, e.Nodes = st, d.Progress()
	return e, Judge(d, e.Nodes, f.World, st.State)
}

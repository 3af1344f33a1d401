package jobdir

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
)

// Job states in an overview (JobOverview.State).
const (
	JobRunning = "running" // a node is at work, and the scheduler does not say the job ended
	JobDone    = "done"    // every node of the world succeeded
	JobFailed  = "failed"  // every node that reported has ended, and not all succeeded (or some never reported)
	JobLost    = "lost"    // a node still says running, but the scheduler says the job ended
	JobPending = "pending" // no node has reported yet, and the scheduler does not say the job ended
)

// JobOverview is one job of the shared folder, as `benchctl jobs` lists it: from job.json,
// the nodes' status.json files and, when it can be asked, the scheduler.
type JobOverview struct {
	ID       string     `json:"id"`
	Attempt  int        `json:"attempt"`
	Name     string     `json:"name,omitempty"` // the manifest's
	State    string     `json:"state"`
	Nodes    int        `json:"nodes"`    // the world
	Reported int        `json:"reported"` // node folders with a readable status
	Started  *time.Time `json:"started,omitempty"`
	Ended    *time.Time `json:"ended,omitempty"`
	// Seconds is from the start to the last node's end (to now while it runs).
	Seconds   float64 `json:"seconds"`
	Outcome   string  `json:"outcome"`             // "3/3 succeeded", "1 of 3 nodes failed (exit 3)"
	Scheduler string  `json:"scheduler,omitempty"` // the scheduler's state, when it knew the job
	Collected bool    `json:"collected"`           // collect has written perf.csv
	Path      string  `json:"path"`

	modified time.Time // the folder's time, to order jobs without a start
}

// Overview lists the newest jobs of the shared folder (at most limit; 0: all), newest
// first, each judged from its newest attempt's files. sched (which may be nil) is asked
// only about jobs that have not finished by their files; a job it cannot say about (an
// error, or a job it does not know) is judged by its files alone.
func (l Layout) Overview(ctx context.Context, limit int, sched Scheduler, now time.Time) ([]JobOverview, error) {
	listed, err := l.List()
	if err != nil {
		return nil, err
	}
	// A folder's time changes when collect writes into it: the newest folders are read
	// (a margin beyond limit), then ordered by when the jobs started.
	if limit > 0 && len(listed) > limit+overviewMargin {
		listed = listed[:limit+overviewMargin]
	}
	out := make([]JobOverview, 0, len(listed))
	for _, j := range listed {
		o := l.overview(ctx, j.ID, sched, now)
		o.modified = j.Modified
		out = append(out, o)
	}
	slices.SortStableFunc(out, func(a, b JobOverview) int { return b.when().Compare(a.when()) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// overviewMargin is how many more job folders than asked for Overview reads to order them
// by start time.
const overviewMargin = 50

// when orders jobs: their start, else their folder's time.
func (o JobOverview) when() time.Time {
	if o.Started != nil {
		return *o.Started
	}
	return o.modified
}

// Newest is the job that started last (job.json's startedAt; a job without one counts by its
// folder's time), among the most recently changed folders; "" when there are none.
func (l Layout) Newest() (string, error) {
	listed, err := l.List()
	if err != nil || len(listed) == 0 {
		return "", err
	}
	if len(listed) > overviewMargin {
		listed = listed[:overviewMargin]
	}
	best, bestAt := "", time.Time{}
	var r safefile.Reader
	for _, j := range listed {
		at := j.Modified
		if data, err := r.ReadNoFollow(l.Latest(j.ID).JobFile(), MaxStatusSize); err == nil {
			var jj Job
			if jj.UnmarshalJSON(data) == nil && !jj.StartedAt.IsZero() {
				at = jj.StartedAt
			}
		}
		if best == "" || at.After(bestAt) {
			best, bestAt = j.ID, at
		}
	}
	return best, nil
}

func (l Layout) overview(ctx context.Context, id string, sched Scheduler, now time.Time) JobOverview {
	d := l.Latest(id)
	o := JobOverview{ID: id, Attempt: d.Attempt, Path: d.Path}
	var r safefile.Reader
	if data, err := r.ReadNoFollow(d.JobFile(), MaxStatusSize); err == nil {
		var j Job
		if j.UnmarshalJSON(data) == nil {
			o.Name, o.Nodes = j.Manifest.Name, j.WorldSize()
			if !j.StartedAt.IsZero() {
				t := j.StartedAt
				o.Started = &t
			}
		}
	}
	nodes, list := d.progress(d.listNodes())
	o.Reported = len(nodes)
	unreadable := max(0, len(list.Nodes)-o.Reported) // a folder whose status.json cannot be read
	o.Nodes = max(o.Nodes, o.Reported+unreadable)
	running, failed, code := 0, unreadable, 0
	for _, n := range nodes {
		switch n.Outcome {
		case OutcomeRunning:
			running++
		case OutcomeSuccess:
		default:
			failed++
			code = max(code, n.ExitCode)
		}
	}
	for _, n := range nodes {
		if n.Finished != nil && (o.Ended == nil || n.Finished.After(*o.Ended)) {
			o.Ended = n.Finished
		}
	}
	ended := false
	if sched != nil && (running > 0 || o.Reported == 0) { // only an unfinished job needs asking
		if st, err := sched.JobState(ctx, id); err == nil && st.Known {
			o.Scheduler, ended = st.State, st.Ended()
		}
	}
	switch {
	case running > 0 && ended:
		o.State = JobLost
		o.Outcome = fmt.Sprintf("%d of %d nodes never recorded their end (the scheduler says %s)", running, o.Nodes, strings.ToLower(o.Scheduler))
	case running > 0:
		o.State, o.Ended = JobRunning, nil
		o.Outcome = Summary(nodes, o.Nodes)
	case o.Reported == 0 && !ended:
		o.State = JobPending
		o.Outcome = "no node has reported yet"
	case failed == 0 && o.Reported >= o.Nodes && o.Nodes > 0:
		o.State = JobDone
		o.Outcome = fmt.Sprintf("%d/%d succeeded", o.Reported, o.Nodes)
	default:
		o.State = JobFailed
		switch {
		case unreadable > 0 && failed == unreadable:
			o.Outcome = fmt.Sprintf("%d of %d nodes left a status.json that cannot be read (benchctl collect names them)", unreadable, o.Nodes)
		case failed > 0:
			o.Outcome = fmt.Sprintf("%d of %d nodes failed (exit %d)", failed, o.Nodes, code)
		default:
			o.Outcome = fmt.Sprintf("%d of %d nodes never reported", o.Nodes-o.Reported, o.Nodes)
		}
		if never := o.Nodes - o.Reported - unreadable; failed > 0 && never > 0 {
			o.Outcome += fmt.Sprintf("; %d never reported", never)
		}
	}
	switch n := len(list.Stray); {
	case n == 1:
		o.Outcome += "; 1 folder in nodes/ is not the job's (benchctl collect names it)"
	case n > 1:
		o.Outcome += fmt.Sprintf("; %d folders in nodes/ are not the job's (benchctl collect names them)", n)
	}
	if o.Started != nil {
		end := now
		if o.Ended != nil {
			end = *o.Ended
		}
		o.Seconds = max(0, end.Sub(*o.Started).Seconds())
	}
	if st, err := os.Lstat(d.Output(PerfFile)); err == nil && st.Mode().IsRegular() {
		o.Collected = true
	}
	return o
}

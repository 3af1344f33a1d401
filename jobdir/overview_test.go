package jobdir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeOverviewJob writes job id with world nodes whose outcomes are given (a node left
// out never reported), started at start and ended a minute later.
func writeOverviewJob(t *testing.T, l Layout, id string, world int, outcomes []string, start time.Time) {
	t.Helper()
	d := l.Job(id, 0)
	os.MkdirAll(d.Nodes(), 0o755)
	j := &Job{Job: id, World: world, StartedAt: start}
	if err := j.SetManifest(map[string]any{"name": "m-" + id}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJob(d.JobFile(), j); err != nil {
		t.Fatal(err)
	}
	for r, oc := range outcomes {
		nd := d.Node(r, "h"+string(rune('a'+r)))
		os.MkdirAll(nd.Path, 0o755)
		s := &Status{Version: 1, Job: id, Rank: r, Outcome: oc, StartedAt: start}
		if oc != OutcomeRunning {
			end := start.Add(time.Minute)
			s.FinishedAt = &end
			if oc != OutcomeSuccess {
				s.ExitCode = 3
			}
		}
		if err := WriteStatus(nd.Status(), s); err != nil {
			t.Fatal(err)
		}
	}
}

// benchctl jobs judges each job from its files and, when it can be asked, the scheduler:
// done, failed, running, lost (a node still running in a job the scheduler says ended),
// pending; newest first; a limit keeps the newest.
func TestOverview(t *testing.T) {
	l := Layout{Shared: t.TempDir()}
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	now := start.Add(10 * time.Minute)
	jobs := []struct {
		id       string
		world    int
		outcomes []string
	}{
		{"101", 3, []string{OutcomeSuccess, OutcomeSuccess, OutcomeSuccess}},
		{"102", 3, []string{OutcomeSuccess, OutcomeFailure, OutcomeSuccess}},
		{"103", 2, []string{OutcomeRunning, OutcomeSuccess}},
		{"104", 2, []string{OutcomeRunning, OutcomeRunning}},
		{"105", 4, nil},
		{"106", 3, []string{OutcomeSuccess, OutcomeSuccess}},
	}
	for i, j := range jobs {
		writeOverviewJob(t, l, j.id, j.world, j.outcomes, start)
		if j.id == "101" {
			os.WriteFile(l.Job("101", 0).Output("perf.csv"), []byte("model\n"), 0o644)
		}
		mod := start.Add(time.Duration(i) * time.Second) // 106 is the newest
		os.Chtimes(l.Job(j.id, 0).Path, mod, mod)
	}
	sched := fakeScheduler{states: map[string]SchedulerState{"104": ended("COMPLETED"), "103": running("RUNNING")},
		errs: map[string]error{"105": errors.New("slurmctld does not answer")}} // 105 is judged by its files
	got, err := l.Overview(context.Background(), 0, sched, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ state, outcome string }{
		"101": {JobDone, "3/3 succeeded"},
		"102": {JobFailed, "1 of 3 nodes failed (exit 3)"},
		"103": {JobRunning, "2/2 nodes reported:"},
		"104": {JobLost, "2 of 2 nodes never recorded their end (the scheduler says completed)"},
		"105": {JobPending, "no node has reported yet"},
		"106": {JobFailed, "1 of 3 nodes never reported"},
	}
	if len(got) != len(want) || got[0].ID != "106" || got[len(got)-1].ID != "101" {
		t.Fatalf("order %+v", got)
	}
	for _, o := range got {
		w := want[o.ID]
		if o.State != w.state || !strings.HasPrefix(o.Outcome, w.outcome) || o.Name != "m-"+o.ID {
			t.Errorf("%s: %s %q (%s), want %s %q", o.ID, o.State, o.Outcome, o.Name, w.state, w.outcome)
		}
		switch {
		case o.ID == "101" && (!o.Collected || o.Seconds != 60 || o.Ended == nil):
			t.Errorf("101: collected %v, %v s, ended %v", o.Collected, o.Seconds, o.Ended)
		case o.ID == "103" && (o.Seconds != 600 || o.Ended != nil || o.Scheduler != "RUNNING"):
			t.Errorf("103: %v s, ended %v, scheduler %q", o.Seconds, o.Ended, o.Scheduler)
		}
	}
	if got, _ := l.Overview(context.Background(), 2, nil, now); len(got) != 2 || got[0].ID != "106" || got[1].ID != "105" {
		t.Errorf("limit 2: %+v", got)
	}
	// No jobs folder: an empty list, not an error.
	if got, err := (Layout{Shared: t.TempDir()}).Overview(context.Background(), 0, nil, now); err != nil || len(got) != 0 {
		t.Errorf("no jobs: %+v %v", got, err)
	}
}

// A job folder whose job.json is a FIFO and whose node folder holds a 6,000-character
// status: listed as what can be read, never blocking.
func TestOverviewHostileFolders(t *testing.T) {
	l := Layout{Shared: t.TempDir()}
	d := l.Job("9", 0)
	os.MkdirAll(filepath.Join(d.Nodes(), "0-h"), 0o755)
	if err := syscall.Mkfifo(d.JobFile(), 0o644); err != nil {
		t.Skip(err)
	}
	os.WriteFile(filepath.Join(d.Nodes(), "0-h", StatusFile), []byte(strings.Repeat("x", 6000)), 0o644)
	// Another job whose nodes folder is a FIFO: opening it would wait for a writer.
	d2 := l.Job("10", 0)
	os.MkdirAll(d2.Path, 0o755)
	syscall.Mkfifo(d2.Nodes(), 0o644)
	done := make(chan []JobOverview)
	go func() { got, _ := l.Overview(context.Background(), 0, nil, time.Now()); done <- got }()
	select {
	case got := <-done:
		if len(got) != 2 || got[0].State != JobPending || got[0].Name != "" || got[1].State != JobPending {
			t.Errorf("%+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Overview blocked on a FIFO")
	}
}

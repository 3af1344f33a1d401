package jobdir

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func writeNodeStatus(t *testing.T, d Dir, rank int, host, outcome string, exit int, phase string) {
	t.Helper()
	n := d.Node(rank, host)
	s := &Status{Version: StatusVersion, Job: d.JobID, Rank: rank, Host: host, Outcome: outcome, ExitCode: exit,
		Phases: []PhaseStatus{{Name: phase, Outcome: PhaseOK}}}
	if outcome != OutcomeRunning {
		now := time.Now()
		s.FinishedAt = &now
	}
	if err := mkdirAll(n.Path); err != nil {
		t.Fatal(err)
	}
	if err := WriteStatus(n.Status(), s); err != nil {
		t.Fatal(err)
	}
}

func TestFollowAndJudge(t *testing.T) {
	l := Layout{t.TempDir()}
	d := l.Job("12", 0)
	writeNodeStatus(t, d, 0, "n1", OutcomeRunning, 0, PhaseRun)
	writeNodeStatus(t, d, 1, "n2", OutcomeRunning, 0, PhaseImage)
	var lines []string
	polls := 0
	f := Follow{Layout: l, JobID: "12", World: 3,
		Scheduler: fakeScheduler{wait: func(ctx context.Context, tick func(SchedulerState, error)) (SchedulerState, error) {
			tick(running("RUNNING"), nil)
			tick(running("RUNNING"), nil) // unchanged: no second line
			polls++
			writeNodeStatus(t, d, 0, "n1", OutcomeSuccess, 0, PhaseResults)
			writeNodeStatus(t, d, 1, "n2", OutcomeFailure, 2, PhaseImage)
			writeNodeStatus(t, d, 2, "n3", OutcomeSuccess, 0, PhaseResults)
			tick(running("COMPLETING"), nil)
			return ended("COMPLETED"), nil
		}},
		Line: func(line string, err error) { lines = append(lines, line) }}
	end, err := f.Run(context.Background())
	want := []string{"job 12 RUNNING: 2/3 nodes reported: 1 image, 1 run", "job 12 COMPLETING: 3/3 nodes reported: 1 failure, 2 success"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	var ee *EndedError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(err.Error(), "1 of 3 nodes did not succeed") {
		t.Fatalf("verdict %v (the worst node's code, 2 for a build failure)", err)
	}
	if len(end.Nodes) != 3 || end.State != "COMPLETED" || !end.Scheduler.Ended() || end.Dir.Path != d.Path {
		t.Fatalf("%+v", end)
	}
	for _, c := range []struct {
		nodes []NodeProgress
		world int
		code  int
	}{
		{[]NodeProgress{{Outcome: OutcomeSuccess}, {Outcome: OutcomeSuccess}}, 2, 0},
		{[]NodeProgress{{Outcome: OutcomeSuccess}}, 2, 3},                                         // a node never reported
		{[]NodeProgress{{Outcome: OutcomeSuccess}, {Outcome: OutcomeRunning}}, 2, 3},              // a node never recorded its end
		{[]NodeProgress{{Outcome: OutcomeFailure, ExitCode: 1}, {Outcome: OutcomeSuccess}}, 2, 3}, // 1 is reported as a run failure
		{[]NodeProgress{{Outcome: OutcomeFailure, ExitCode: 4}, {Outcome: OutcomeSuccess}}, 2, 4},
	} {
		err := Judge(d, c.nodes, c.world, "COMPLETED")
		code := 0
		if errors.As(err, &ee) {
			code = ee.Code
		}
		if code != c.code {
			t.Errorf("Judge(%+v, world %d) = %v, want code %d", c.nodes, c.world, err, c.code)
		}
	}
}

func mkdirAll(p string) error { return os.MkdirAll(p, 0o755) }

// A node folder linked in from elsewhere (it may lead outside the job folder) counts for
// Progress as little as it does for collect: not at all.
func TestProgressLeavesOutALinkedNodeFolder(t *testing.T) {
	l := Layout{t.TempDir()}
	d := l.Job("13", 0)
	elsewhere := Layout{t.TempDir()}.Job("13", 0)
	writeNodeStatus(t, elsewhere, 1, "n2", OutcomeSuccess, 0, PhaseResults)
	writeNodeStatus(t, d, 0, "n1", OutcomeSuccess, 0, PhaseResults)
	if err := os.Symlink(elsewhere.Node(1, "n2").Path, d.Node(1, "n2").Path); err != nil {
		t.Fatal(err)
	}
	if p := d.Progress(); len(p) != 1 || p[0].Node != "0-n1" {
		t.Fatalf("progress %+v", p)
	}
	if err := Judge(d, d.Progress(), 2, "COMPLETED"); err == nil {
		t.Fatal("a job whose rank 1 is a link succeeded")
	}
}

package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// writeCmdJob writes a job of world nodes with the given outcomes, started at start.
func writeCmdJob(t *testing.T, shared, id string, world int, outcomes []string, start time.Time, mod time.Time) {
	t.Helper()
	l := jobdir.Layout{Shared: shared}
	d := l.Job(id, 0)
	j := &jobdir.Job{Job: id, World: world, StartedAt: start}
	j.SetManifest(map[string]any{"name": "allreduce"})
	jobdirtest.Job(t, d, j)
	for r, oc := range outcomes {
		nd := d.Node(r, "n"+string(rune('1'+r)))
		s := &jobdir.Status{Version: 1, Job: id, Rank: r, Outcome: oc, StartedAt: start}
		if oc != jobdir.OutcomeRunning {
			end := start.Add(95 * time.Second)
			s.FinishedAt = &end
			if oc != jobdir.OutcomeSuccess {
				s.ExitCode = 3
			}
		}
		jobdirtest.Status(t, nd, s)
	}
	os.Chtimes(d.Path, mod, mod)
}

// benchctl jobs lists the shared folder's jobs newest first, as a table and as JSON (an
// empty list is []); collect --latest takes the newest.
func TestJobsAndCollectLatest(t *testing.T) {
	saved := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = saved })
	shared := t.TempDir()
	start := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	s := jobdir.OutcomeSuccess
	writeCmdJob(t, shared, "41", 3, []string{s, s, s}, start, start.Add(time.Hour))
	writeCmdJob(t, shared, "42", 3, []string{s, jobdir.OutcomeFailure, s}, start.Add(time.Hour), start.Add(2*time.Hour))
	code, out, errs := run(t, "jobs", "--shared-dir", shared, "--no-slurm")
	want := `JOB  NAME       STATE   NODES  STARTED           DURATION  COLLECTED  OUTCOME
42   allreduce  failed  3      2026-11-20 10:00  1m35s     no         1 of 3 nodes failed (exit 3)
41   allreduce  done    3      2026-11-20 09:00  1m35s     no         3/3 succeeded
`
	if code != 0 || out != want {
		t.Errorf("exit %d\n%s\nwant\n%s\n%s", code, out, want, errs)
	}
	code, out, _ = run(t, "jobs", "--shared-dir", shared, "--no-slurm", "-o", "json", "--limit", "1")
	var got []jobdir.JobOverview
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || got[0].ID != "42" || got[0].State != jobdir.JobFailed {
		t.Errorf("json: exit %d %s", code, out)
	}
	if code, out, _ := run(t, "jobs", "--shared-dir", t.TempDir(), "-o", "json"); code != 0 || out != "[]\n" {
		t.Errorf("no jobs: exit %d %q", code, out)
	}
	if code, _, errs := run(t, "jobs", "--limit", "-1", "--shared-dir", shared); code != exitInvalid || !strings.Contains(errs, "invalid --limit -1") {
		t.Errorf("--limit -1: exit %d %s", code, errs)
	}
	// Collecting the older job writes into its folder (its time is now the newest): the
	// order, and --latest, still follow when the jobs started.
	run(t, "collect", "41", "--shared-dir", shared) // exit 3: the fixture job has no benchmarks
	if _, err := os.Stat(jobdir.Layout{Shared: shared}.Job("41", 0).Output(jobdir.PerfFile)); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := run(t, "jobs", "--shared-dir", shared, "--no-slurm"); !strings.HasPrefix(strings.Split(out, "\n")[1], "42 ") {
		t.Errorf("after collecting 41:\n%s", out)
	}
	// collect --latest collects 42 (exit 3: a node failed), and names it.
	code, _, errs = run(t, "collect", "--latest", "--shared-dir", shared)
	if code != 3 || !strings.Contains(errs, "job=42") {
		t.Errorf("collect --latest: exit %d\n%s", code, errs)
	}
	for args, want := range map[string]string{
		"collect --shared-dir " + shared:               "no job given",
		"collect 41 --latest --shared-dir " + shared:   "--latest and the job 41 are both given",
		"collect --latest --shared-dir " + t.TempDir(): "--latest: there are no jobs in",
	} {
		if code, _, errs := run(t, strings.Fields(args)...); code != exitInvalid || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d %s", args, code, errs)
		}
	}
}

// The hostile fixture jobs (a damaged job.json and status, a folder that is no node, a
// claimed world of two billion, 6,000-character lines) are listed at once, each judged
// from what can be read: a status that cannot be read is a failure, not a success.
func TestJobsOnTheHostileFixtures(t *testing.T) {
	code, out, errs := run(t, "jobs", "--shared-dir", "../../tests/fixtures/hostile", "--no-slurm", "--limit", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"damaged    -        failed  5", "1 of 5 nodes left a status.json that cannot be read",
		"longlines  hostile  failed  2", "escape     hostile  done    1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 300 {
			t.Errorf("a line of %d characters: %.100s", len(l), l)
		}
	}
}

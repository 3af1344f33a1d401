package main

import (
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// Three collected jobs of one manifest: a reference, compare of one job against it, the
// last and the best earlier job.
func TestReferenceAndCompareAgainst(t *testing.T) {
	shared := t.TempDir()
	l := jobdir.Layout{Shared: shared}
	for i, perf := range []string{"100", "120", "90"} {
		id := string(rune('1' + i))
		j := jobdirtest.NewJob(t, id, []string{"h0"}, jobdir.JobManifest{Name: "m"})
		j.StartedAt = time.Date(2026, 11, 1+i, 0, 0, 0, 0, time.UTC)
		d := jobdirtest.Job(t, l.Job(id, 0), j)
		jobdirtest.File(t, d.Output(jobdir.PerfFile), []byte("model,metric,performance\ntrain,samples_per_second,"+perf+"\n"))
	}
	other := jobdirtest.NewJob(t, "9", []string{"h0"}, jobdir.JobManifest{Name: "other"})
	jobdirtest.File(t, jobdirtest.Job(t, l.Job("9", 0), other).Output(jobdir.PerfFile), []byte("model,metric,performance\ntrain,samples_per_second,1000\n"))

	cases := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"compare", "3"}, 4, "", "manifest m has no reference job: set one with benchctl reference set JOB"},
		{[]string{"reference", "show", "m"}, 0, "m has no reference job", ""},
		{[]string{"reference", "set", "1"}, 0, "the reference of m is job 1 (attempt 0)", ""},
		{[]string{"reference", "show", "3"}, 0, "the reference of m is job 1 (attempt 0), set ", ""},
		{[]string{"compare", "3"}, 3, "-10.00%", "1 rows regressed"},
		{[]string{"compare", "3", "--against", "last"}, 3, "-25.00%", ""},
		{[]string{"compare", "3", "--against", "best"}, 3, "-25.00%", ""},
		{[]string{"compare", "2", "--against", "last"}, 0, "improved", ""},
		{[]string{"compare", "1", "--against", "last"}, 4, "", "no collected job of manifest m started before job 1"},
		{[]string{"compare", "3", "--against", "9"}, 3, "1000", ""},
		{[]string{"reference", "set", "42"}, 4, "", "no job 42"},
		{[]string{"reference", "show", "../x"}, 4, "", `"../x" is not a manifest name`},
		{[]string{"reference", "clear", "3"}, 0, "m has no reference job now", ""},
		{[]string{"compare", "3"}, 4, "", "has no reference job"},
	}
	for _, c := range cases {
		args := append(c.args, "--shared-dir", shared)
		code, out, errs := run(t, args...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errs, c.stderr) {
			t.Errorf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.args, code, c.code, out, errs)
		}
	}
}

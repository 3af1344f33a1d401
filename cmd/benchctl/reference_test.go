package main

import (
	"fmt"
	"os"
	"path/filepath"
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
	l := collectedJobs(t, shared, "model,metric,performance\ntrain,samples_per_second,%s\n", "100", "120", "90")
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

// collect --check judges the job against its manifest's reference (exit 3 on a regression,
// 0 within --threshold), warns when there is none, and --junit writes the verdicts.
func TestCollectCheckAndJUnit(t *testing.T) {
	shared := t.TempDir()
	l := jobdir.Layout{Shared: shared}
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, perf := range []string{"100", "80"} {
		id := string(rune('1' + i))
		j := jobdirtest.NewJob(t, id, []string{"h0"}, jobdir.JobManifest{Name: "m", Benchmarks: []jobdir.JobBenchmark{{Name: "b", Results: "b.csv"}}})
		j.StartedAt = end.Add(time.Duration(i) * time.Hour)
		d := jobdirtest.Job(t, l.Job(id, 0), j)
		nd := d.Node(0, "h0")
		jobdirtest.Status(t, nd, &jobdir.Status{Version: 1, Rank: 0, Host: "h0", World: 1, Outcome: jobdir.OutcomeSuccess, FinishedAt: &end,
			Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeSuccess, DurationSeconds: 2}}})
		jobdirtest.Result(t, nd, "b", "b.csv", []byte("model,performance,metric,status\nb,"+perf+",samples_per_second,SUCCESS\n"))
	}
	junit := filepath.Join(t.TempDir(), "results.xml")
	// A bad --threshold is refused before anything is collected.
	if code, _, errs := run(t, "collect", "2", "--check", "--threshold", "lots", "--shared-dir", shared); code != 4 || !strings.Contains(errs, "invalid --threshold") {
		t.Errorf("--threshold lots: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(l.Job("2", 0).Output(jobdir.PerfFile)); err == nil {
		t.Errorf("collected although --threshold was refused")
	}
	if code, _, errs := run(t, "collect", "2", "--check", "--shared-dir", shared); code != 0 || !strings.Contains(errs, "nothing to check against") {
		t.Errorf("no reference: exit %d\n%s", code, errs)
	}
	if code, _, errs := run(t, "collect", "1", "--shared-dir", shared); code != 0 {
		t.Fatalf("collect 1: exit %d\n%s", code, errs)
	}
	if code, _, errs := run(t, "reference", "set", "1", "--shared-dir", shared); code != 0 {
		t.Fatalf("reference set: exit %d\n%s", code, errs)
	}
	code, _, errs := run(t, "collect", "2", "--check", "--junit", junit, "--shared-dir", shared)
	if code != 3 || !strings.Contains(errs, "regressed") || !strings.Contains(errs, "-20.00%") {
		t.Errorf("a 20%% regression: exit %d\n%s", code, errs)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuites name="benchctl" tests="1" failures="1" skipped="0">`, `<testcase classname="b" name="b samples_per_second" time="2">`,
		`<failure message="regressed against job 1 (reference): base 100, new 80, change -20.00% (tolerance 5%, higher is better)`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JUnit lacks %q:\n%s", want, data)
		}
	}
	// The report shows this job against the reference and the row's trend over both jobs.
	page, err := os.ReadFile(l.Job("2", 0).Output(jobdir.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<h2>Against the reference job 1</h2>`, `data-verdict="regressed"`, `data-trend="b · samples_per_second"`, `class="cur"`, "2 jobs, 80 to 100"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if code, _, errs := run(t, "collect", "2", "--check", "--threshold", "30%", "--junit", junit, "--shared-dir", shared); code != 0 {
		t.Errorf("within 30%%: exit %d\n%s", code, errs)
	}
	if data, _ := os.ReadFile(junit); !strings.Contains(string(data), `failures="0"`) || !strings.Contains(string(data), "no change against job 1") {
		t.Errorf("JUnit within 30%%:\n%s", data)
	}
}

// history lists the jobs of a manifest with their verdicts against the reference, in every
// format.
func TestHistoryCommand(t *testing.T) {
	shared := t.TempDir()
	collectedJobs(t, shared, "model,metric,performance,status\ntrain,samples_per_second,%s,SUCCESS\n", "100", "120", "90")
	run(t, "reference", "set", "1", "--shared-dir", shared)
	cases := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"history", "--name", "m"}, 0, []string{"STARTED", "2026-11-03 00:00  3", "regressed", "improved"}},
		{[]string{"history", "2", "-n", "1", "-o", "csv"}, 0, []string{"started,job,attempt", ",3,0,m,train,samples_per_second,,,90,"}},
		{[]string{"history", "-o", "json"}, 0, []string{`"verdict": "regressed"`}},
		{[]string{"history", "-o", "openmetrics"}, 0, []string{`benchctl_performance{manifest="m",model="train",metric="samples_per_second",key="",variant=""} 90`, "# EOF"}},
		{[]string{"history", "-o", "markdown"}, 0, []string{"| STARTED | JOB |"}},
		{[]string{"history", "42"}, 4, nil},
		{[]string{"history", "-n", "-1"}, 4, nil},
	}
	for _, c := range cases {
		code, out, errs := run(t, append(c.args, "--shared-dir", shared)...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", c.args, code, c.code, out, errs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

// compare --references judges rows against expected values with bounds, alone or beside a
// comparison; its rules come first.
func TestCompareReferences(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		return p
	}
	perf := write("perf.csv", "model,metric,performance,size_bytes\nar,GB/s,7.5,64\nar,GB/s,3,1024\nlat,step_ms,12,\n")
	refs := write("refs.yaml", `metrics:
  step_ms: {better: lower, tolerance: 10%}
references:
  - {model: ar, metric: GB/s, key: {size_bytes: "64"}, value: 7, lower: -5%, upper: +5%}
  - {model: ar, metric: GB/s, key: {size_bytes: "1024"}, value: 4}
  - {model: lat, metric: step_ms, value: 10}
  - {model: gone, metric: x, value: 1}
`)
	code, out, errs := run(t, "compare", perf, "--references", refs, "-o", "csv")
	if code != 3 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"ar,GB/s,size_bytes=64,7,7.5,7.14285714285714",
		"ar,GB/s,size_bytes=1024,4,3,-25,higher,5,regressed,",
		"lat,step_ms,,10,12,20,lower,10,regressed,",
		"gone,x,,1,,,higher,5,only in base,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run(t, "compare", perf, "--references", write("bad.yaml", "references: [{model: a}]\n")); code != 4 || !strings.Contains(errs, "bad.yaml:1: references[0]") {
		t.Errorf("a bad references file: exit %d\n%s", code, errs)
	}
}

// collectedJobs writes jobs 1, 2, ... of manifest m, started a day apart, each with a
// perf.csv of format filled with its value.
func collectedJobs(t *testing.T, shared, format string, values ...string) jobdir.Layout {
	t.Helper()
	l := jobdir.Layout{Shared: shared}
	for i, v := range values {
		id := string(rune('1' + i))
		j := jobdirtest.NewJob(t, id, []string{"h0"}, jobdir.JobManifest{Name: "m"})
		j.StartedAt = time.Date(2026, 11, 1+i, 0, 0, 0, 0, time.UTC)
		d := jobdirtest.Job(t, l.Job(id, 0), j)
		jobdirtest.File(t, d.Output(jobdir.PerfFile), fmt.Appendf(nil, format, v))
	}
	return l
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
)

// rawControl returns the first rune of s a terminal would act on: a C0 control other than
// newline, DEL, a C1 control, a bidi control or a line separator, or a byte not UTF-8.
func rawControl(s string) (rune, bool) {
	for i, r := range s {
		switch {
		case r == '\n':
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"),
			r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x2028 && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r, true
		}
	}
	return 0, false
}

// What nodes and containers wrote (a manifest name in job.json, a phase in status.json, a
// results CSV's cells, a log line the log scan quotes) reached the terminal raw through
// jobs, collect's table and its error: it is shown escaped now, on stdout and stderr, in
// every format.
func TestHostileTextIsEscapedOnScreen(t *testing.T) {
	shared := t.TempDir()
	l := jobdir.Layout{Shared: shared}
	d := l.Job("51", 0)
	os.MkdirAll(d.Nodes(), 0o755)
	j := &jobdir.Job{Job: "51", World: 2, Nodes: []string{"n1", "n2"}, StartedAt: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}
	j.SetManifest(map[string]any{"name": "\x1b]0;pwned\x07name\u202e", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv"}}})
	if err := jobdir.WriteJob(d.JobFile(), j); err != nil {
		t.Fatal(err)
	}
	end := j.StartedAt.Add(time.Minute)
	n0 := d.Node(0, "n1")
	os.MkdirAll(filepath.Join(n0.Results("b")), 0o755)
	jobdir.WriteStatus(n0.Status(), &jobdir.Status{Version: 1, Job: "51", Rank: 0, Host: "n1", Outcome: jobdir.OutcomeSuccess, FinishedAt: &end,
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeSuccess}}})
	os.WriteFile(filepath.Join(n0.Results("b"), "b.csv"), []byte("model,performance,metric\n\"\x1b[2Jm\u009b\",1,\"u\u202e\"\n"), 0o644)
	n1 := d.Node(1, "n2")
	os.MkdirAll(n1.Path, 0o755)
	reason := "log: line 3 contains the error pattern \"FAILED\": \x1b]0;pwned\x07 FAILED"
	jobdir.WriteStatus(n1.Status(), &jobdir.Status{Version: 1, Job: "51", Rank: 1, Host: "n2", Outcome: jobdir.OutcomeRunning,
		Phases: []jobdir.PhaseStatus{{Name: "run\x1b[8m", Outcome: jobdir.OutcomeRunning}}, Error: reason})
	for _, args := range [][]string{
		{"jobs", "--shared-dir", shared, "--no-slurm"},
		{"jobs", "--shared-dir", shared, "--no-slurm", "-o", "json"},
	} {
		code, out, errs := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		if r, bad := rawControl(out + errs); bad {
			t.Errorf("%v prints %U:\n%s%s", args, r, out, errs)
		}
	}
	if _, out, _ := run(t, "jobs", "--shared-dir", shared, "--no-slurm"); !strings.Contains(out, `\x1b]0;pwned\x07name\u202e`) ||
		!strings.Contains(out, `1 run\x1b[8m`) {
		t.Errorf("jobs does not show the escaped name and phase:\n%s", out)
	}
	// the node at rank 1 has failed now, with the log scan's reason
	jobdir.WriteStatus(n1.Status(), &jobdir.Status{Version: 1, Job: "51", Rank: 1, Host: "n2", Outcome: jobdir.OutcomeFailure, ExitCode: 3, FinishedAt: &end,
		Error: reason, Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeFailure, ExitCode: 3, Error: reason}}})
	for _, format := range []string{"table", "markdown", "json", "csv"} {
		code, out, errs := run(t, "collect", "51", "--shared-dir", shared, "-o", format)
		if code != exitRun {
			t.Fatalf("collect -o %s: exit %d %s", format, code, errs)
		}
		if format == "csv" {
			out = "" // a CSV on a pipe is data, byte-exact
		}
		if r, bad := rawControl(out + errs); bad {
			t.Errorf("collect -o %s prints %U:\n%s\n%s", format, r, out, errs)
		}
		if !strings.Contains(errs, `\x1b]0;pwned\x07 FAILED`) {
			t.Errorf("collect -o %s: the error does not show the escaped log line:\n%s", format, errs)
		}
		if format == "json" && !json.Valid([]byte(out)) {
			t.Errorf("collect -o json is not JSON:\n%s", out)
		}
	}
	// A CSV shown on a terminal is escaped too; compare's outputs likewise.
	perf := d.Output(jobdir.PerfFile)
	for _, args := range [][]string{{"collect", "51", "--shared-dir", shared, "-o", "csv"}, {"compare", perf, perf, "-o", "csv"},
		{"compare", perf, perf}, {"compare", perf, perf, "-o", "markdown"}, {"compare", perf, perf, "-o", "json"}} {
		var out, errb bytes.Buffer
		s := iostreams.New(strings.NewReader(""), &out, &errb)
		s.SetStdoutTTY(true)
		Execute(context.Background(), args, s)
		if r, bad := rawControl(out.String() + errb.String()); bad {
			t.Errorf("%v on a terminal prints %U:\n%s\n%s", args, r, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), `\u009b`) {
			t.Errorf("%v does not show the escaped model:\n%s", args, out.String())
		}
	}
}

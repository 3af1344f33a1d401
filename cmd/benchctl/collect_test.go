package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runResults runs benchctl in-process (see run).
func runResults(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return run(t, args...)
}

// fixtures copies the results package's job folders into a fresh shared directory.
func fixtures(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "shared")
	if err := os.CopyFS(dst, os.DirFS("../../results/testdata/shared")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BENCHCTL_SHARED_DIR", "")
	t.Setenv("PATH", t.TempDir()) // no squeue or scontrol: the status files decide
	return dst
}

func TestCollectCommand(t *testing.T) {
	shared := fixtures(t)
	cases := []struct {
		name    string
		args    []string
		code    int
		stdout  []string
		stderr  []string
		written string // a file in the job folder
	}{
		{name: "success", args: []string{"collect", "100", "--shared-dir", shared}, code: 0,
			stdout: []string{"BENCHMARK", "train_0", "100.5", "1-n2", "14164"}, stderr: []string{"collected"}, written: "jobs/100/perf.csv"},
		{name: "csv", args: []string{"collect", "100", "--shared-dir", shared, "-o", "csv"}, code: 0,
			stdout: []string{"model,n_gpus,nnodes", ",perf_min,perf_max,"}},
		{name: "markdown", args: []string{"collect", "100", "--shared-dir", shared, "-o", "markdown"}, code: 0,
			stdout: []string{"| BENCHMARK | MODEL |", "| train | train_2 | samples_per_second | - | 007 |"}},
		{name: "failed nodes exit 3", args: []string{"collect", "300", "--shared-dir", shared}, code: 3,
			stdout: []string{"FAILURE"}, stderr: []string{"job 300 has failures: train: no node produced a result"}, written: "jobs/300/report.html"},
		{name: "missing node exit 3", args: []string{"collect", "400", "--shared-dir", shared}, code: 3,
			stderr: []string{"1-m2 (no status: node never reported"}},
		{name: "latest attempt", args: []string{"collect", "500", "--shared-dir", shared}, code: 0,
			stdout: []string{"61"}, written: "jobs/500.1/summary.json"},
		{name: "first attempt", args: []string{"collect", "500", "--shared-dir", shared, "--attempt", "0"}, code: 3,
			stderr: []string{"requeued"}, written: "jobs/500/summary.json"},
		{name: "running is refused", args: []string{"collect", "600", "--shared-dir", shared}, code: 1,
			stderr: []string{"job 600 (attempt 0) is still running", "--partial"}},
		{name: "running with --partial is never SUCCESS", args: []string{"collect", "600", "--shared-dir", shared, "--partial"}, code: 3,
			stdout: []string{"FAILURE", "partial: 1 of 2 nodes still running"}, stderr: []string{"job 600 has not finished: train: partial: 1 of 2 nodes still running"}},
		{name: "unknown job lists jobs", args: []string{"collect", "42", "--shared-dir", shared}, code: 4,
			stderr: []string{"no job 42", "jobs there: 600, 500, 400, 300, 200, 100"}},
		{name: "no shared dir", args: []string{"collect", "42", "--shared-dir", filepath.Join(shared, "nope")}, code: 4,
			stderr: []string{"no jobs folder in the shared directory"}},
		{name: "bad format", args: []string{"collect", "100", "--shared-dir", shared, "-o", "xml"}, code: 4,
			stderr: []string{`invalid --output "xml"`, "hint: use --output table, csv, json or markdown; --append FILE appends the rows to a perf.csv"}},
		{name: "bad old format", args: []string{"collect", "100", "--shared-dir", shared, "--format", "xml"}, code: 4,
			stderr: []string{`invalid --format "xml"`}},
		{name: "bad attempt", args: []string{"collect", "100", "--shared-dir", shared, "--attempt", "-2"}, code: 4},
		{name: "no job id", args: []string{"collect", "--shared-dir", shared}, code: 4, stderr: []string{"no job given"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runResults(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			for _, s := range c.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			if c.code == exitInvalid && out != "" {
				t.Errorf("printed to stdout on bad input: %q", out)
			}
			if c.written != "" {
				if _, err := os.Stat(filepath.Join(shared, c.written)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestCollectJSONAndAppend(t *testing.T) {
	shared := fixtures(t)
	t.Setenv("BENCHCTL_SHARED_DIR", shared)
	mine := filepath.Join(t.TempDir(), "perf.csv")
	code, out, errs := runResults(t, "collect", "100", "-o", "json", "--append", mine)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s struct {
		Job        string `json:"job"`
		Benchmarks []struct {
			Winner struct{ Rank int } `json:"winner"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Job != "100" || s.Benchmarks[0].Winner.Rank != 1 {
		t.Fatalf("json: %v %+v", err, s)
	}
	if code, _, errs := runResults(t, "collect", "400", "--append", mine); code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, _ := os.ReadFile(mine)
	if lines := strings.Count(string(data), "\n"); lines != 1+4+1 {
		t.Fatalf("appended perf.csv has %d lines:\n%s", lines, data)
	}

	// A target that cannot be appended to is bad input, found before anything is written,
	// and left as it was.
	ragged := filepath.Join(t.TempDir(), "ragged.csv")
	os.WriteFile(ragged, []byte("a,b\n1,2,3\n"), 0o644)
	for target, want := range map[string]string{
		ragged:      "not a CSV this can extend",
		t.TempDir(): "is not a regular file",
		filepath.Join(t.TempDir(), "no", "perf.csv"): "does not exist; create it first",
	} {
		code, _, errs := runResults(t, "collect", "100", "--append", target)
		if code != 4 || !strings.Contains(errs, want) {
			t.Errorf("--append %s: exit %d, %s", target, code, errs)
		}
	}
	if data, _ := os.ReadFile(ragged); string(data) != "a,b\n1,2,3\n" {
		t.Errorf("the bad target was changed: %q", data)
	}
}

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		return p
	}
	base := write("base.csv", "model,metric,performance\na,x,100\nb,x,100\nold,x,1\n")
	same := write("same.csv", "model,metric,performance\na,x,98\nb,x,104\nnew,x,1\n")
	worse := write("worse.csv", "model,metric,performance\na,x,80\nb,x,100\n")
	cases := []struct {
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{[]string{"compare", base, same}, 0, []string{"no change", "only in base", "only in new", "higher (guessed)"}, nil},
		{[]string{"compare", base, worse}, 3, []string{"-20.00%", "regressed"}, []string{"1 rows regressed: a x: -20.00% (tolerance 5%)"}},
		{[]string{"compare", base, worse, "--threshold", "25%"}, 0, nil, nil},
		{[]string{"compare", base, worse, "--metric-direction", "lower"}, 0, []string{"improved"}, nil},
		{[]string{"compare", base, worse, "-o", "json"}, 3, []string{`"verdict": "regressed"`}, nil},
		{[]string{"compare", base, filepath.Join(dir, "none.csv")}, 4, nil, []string{"none.csv"}},
		{[]string{"compare", base, write("bad.csv", "x,y\n1,2\n")}, 4, nil, []string{"no performance column"}},
		{[]string{"compare", base, same, "--threshold", "lots"}, 4, nil, []string{"invalid --threshold"}},
		{[]string{"compare", base, same, "--metric-direction", "up"}, 4, nil, []string{`invalid --metric-direction "up"`}},
		{[]string{"compare", base}, 4, nil, []string{"base.csv is a file, and compare compares two perf.csv files or one job"}},
		{[]string{"compare", base, same, "--against", "last"}, 4, nil, []string{"--against with two sides"}},
	}
	for _, c := range cases {
		code, out, errs := runResults(t, c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", c.args[1:], code, c.code, out, errs)
			continue
		}
		for _, s := range c.stdout {
			if !strings.Contains(out, s) {
				t.Errorf("%v: stdout lacks %q:\n%s", c.args[1:], s, out)
			}
		}
		for _, s := range c.stderr {
			if !strings.Contains(errs, s) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args[1:], s, errs)
			}
		}
	}
}

// collect's -o is a format, as everywhere; for one release a value that is no format and
// looks like a file is still the perf.csv to append to (the old -o FILE), with a warning
// that says to write --append; anything else is a wrong format, and nothing is written.
func TestCollectOutputIsAFormat(t *testing.T) {
	shared := fixtures(t)
	dir := t.TempDir()
	t.Chdir(dir)
	for _, f := range []string{"json", "csv", "table", "markdown"} {
		code, out, errs := run(t, "collect", "100", "--shared-dir", shared, "-o", f)
		if code != 0 || out == "" || strings.Contains(errs, "deprecated") {
			t.Errorf("-o %s: exit %d\n%s", f, code, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("-o %s wrote a file", f)
		}
	}
	code, _, errs := run(t, "collect", "100", "--shared-dir", shared, "-o", "jsn")
	if code != 4 || !strings.Contains(errs, `invalid --output "jsn"`) {
		t.Errorf("-o jsn: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "jsn")); err == nil {
		t.Errorf("-o jsn wrote a file")
	}
	code, _, errs = run(t, "collect", "100", "--shared-dir", shared, "-o", "perf.csv", "--log-format", "json")
	if code != 0 || !strings.Contains(errs, `"msg":"-o perf.csv (a file to append to) is deprecated and will be removed in the next release; write --append perf.csv instead"`) {
		t.Errorf("-o perf.csv: exit %d\n%s", code, errs)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "perf.csv")); err != nil || !strings.HasPrefix(string(data), "model,") {
		t.Errorf("-o perf.csv did not append: %v %q", err, data)
	}
	code, _, errs = run(t, "collect", "100", "--shared-dir", shared, "-o", "perf.csv", "--append", "other.csv")
	if code != 4 || !strings.Contains(errs, "--append other.csv and -o perf.csv both name a file") {
		t.Errorf("-o perf.csv --append other.csv: exit %d\n%s", code, errs)
	}
}

// A baseline that is missing, a FIFO or not a CSV is bad input (exit 4) naming it, and a
// FIFO does not block.
func TestCollectBadBaseline(t *testing.T) {
	shared := fixtures(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.csv")
	os.WriteFile(garbage, []byte("just,text\n1,2\n"), 0o644)
	for path, want := range map[string]string{
		filepath.Join(dir, "none.csv"): "reading the baseline",
		fifo:                           "is a FIFO (named pipe), not a regular file",
		garbage:                        "no performance column",
	} {
		code, _, errs := runResults(t, "collect", "100", "--shared-dir", shared, "--baseline", path)
		if code != exitInvalid || !strings.Contains(errs, path) || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d\n%s", path, code, errs)
		}
	}
}

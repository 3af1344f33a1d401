package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envMap returns a getenv that reads m.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestRun(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		env      map[string]string
		code     int
		perfLine string   // last stdout line, when code is 0
		rows     []string // "model,performance" of each CSV row, when code is 0
		errText  string   // in stderr
	}{
		{"defaults", nil, nil, 0, "performance: 100 samples_per_second",
			[]string{"dummy_0,100", "dummy_1,200", "dummy_2,300"}, "node rank 0 of 1"},
		{"rank 2 of 4", []string{"--rows", "2"}, map[string]string{"NODE_RANK": "2", "NNODES": "4"}, 0,
			"performance: 102 samples_per_second", []string{"dummy_0,102", "dummy_1,202"}, ""},
		{"fail rank matches", []string{"--fail-rank", "1"}, map[string]string{"NODE_RANK": "1", "NNODES": "2"}, 3, "", nil, "fails on purpose"},
		{"fail rank custom code", []string{"--fail-rank", "0", "--exit-code", "7"}, nil, 7, "", nil, "exit status 7"},
		{"fail after a while", []string{"--fail-rank", "0", "--fail-after", "50ms"}, nil, 3, "", nil, "fails in 50ms"},
		{"negative fail-after", []string{"--fail-rank", "0", "--fail-after", "-1s"}, nil, 2, "", nil, "--fail-after -1s: must not be negative"},
		{"fail rank other node", []string{"--fail-rank", "1", "--rows", "1"}, map[string]string{"NODE_RANK": "0", "NNODES": "2"}, 0,
			"performance: 100 samples_per_second", []string{"dummy_0,100"}, ""},
		{"short sleep", []string{"--sleep", "10ms", "--rows", "1"}, nil, 0, "performance: 100 samples_per_second", []string{"dummy_0,100"}, "sleeping 10ms"},
		{"help", []string{"-h"}, nil, 0, "", nil, "usage: dummy"},
		{"unknown flag", []string{"--nope"}, nil, 2, "", nil, "flag provided but not defined: -nope"},
		{"bad rows", []string{"--rows", "x"}, nil, 2, "", nil, "invalid value \"x\" for flag -rows"},
		{"zero rows", []string{"--rows", "0"}, nil, 2, "", nil, "--rows 0: must be at least 1"},
		{"negative sleep", []string{"--sleep", "-1s"}, nil, 2, "", nil, "must not be negative"},
		{"bad exit code", []string{"--exit-code", "0"}, nil, 2, "", nil, "--exit-code 0"},
		{"extra args", []string{"foo"}, nil, 2, "", nil, "unexpected arguments"},
		{"bad NODE_RANK", nil, map[string]string{"NODE_RANK": "one"}, 2, "", nil, `NODE_RANK="one" is not a whole number`},
		{"rank too big", nil, map[string]string{"NODE_RANK": "2", "NNODES": "2"}, 2, "", nil, "NODE_RANK=2 is out of range"},
		{"bad NNODES", nil, map[string]string{"NNODES": "0"}, 2, "", nil, "NNODES=0 is out of range"},
		{"bad MASTER_PORT", nil, map[string]string{"MASTER_PORT": "70000"}, 2, "", nil, "MASTER_PORT=70000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"BENCHCTL_OUTPUT_DIR": dir}
			for k, v := range tc.env {
				env[k] = v
			}
			var stdout, stderr bytes.Buffer
			code := run(tc.args, envMap(env), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.errText) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.errText)
			}
			if tc.rows == nil {
				if _, err := os.Stat(filepath.Join(dir, "dummy.csv")); err == nil {
					t.Errorf("dummy.csv written, but none was expected")
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if last := lines[len(lines)-1]; last != tc.perfLine {
				t.Errorf("last stdout line %q, want %q", last, tc.perfLine)
			}
			checkCSV(t, filepath.Join(dir, "dummy.csv"), env, tc.rows)
		})
	}
}

func checkCSV(t *testing.T, path string, env map[string]string, want []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "model,performance,metric,status,node_rank,nnodes" {
		t.Errorf("header %q", got)
	}
	if len(recs)-1 != len(want) {
		t.Fatalf("%d rows, want %d", len(recs)-1, len(want))
	}
	rank, nnodes := env["NODE_RANK"], env["NNODES"]
	if rank == "" {
		rank, nnodes = "0", "1"
	}
	for i, w := range want {
		r := recs[i+1]
		got := strings.Join([]string{r[0], r[1]}, ",")
		if got != w || r[2] != "samples_per_second" || r[3] != "SUCCESS" || r[4] != rank || r[5] != nnodes {
			t.Errorf("row %d = %q, want %s,samples_per_second,SUCCESS,%s,%s", i, r, w, rank, nnodes)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(m) > 0 {
		t.Errorf("temporary files left behind: %v", m)
	}
}

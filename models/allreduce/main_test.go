package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		code    int
		errText string
	}{
		{"single rank", []string{"--size", "64K", "--iters", "2"}, nil, 0, "timing a local copy"},
		{"bad size", []string{"--size", "lots"}, nil, 2, `"lots" is not a size`},
		{"odd size", []string{"--size", "6"}, nil, 2, "must be a multiple of 4"},
		{"bad iters", []string{"--iters", "0"}, nil, 2, "--iters 0"},
		{"bad timeout", []string{"--io-timeout", "0s"}, nil, 2, "must be positive"},
		{"unknown flag", []string{"--ranks", "3"}, nil, 2, "flag provided but not defined"},
		{"bad MASTER_PORT", nil, map[string]string{"MASTER_PORT": "http"}, 2, `MASTER_PORT="http" is not a whole number`},
		{"bad NODE_RANK", nil, map[string]string{"NNODES": "2", "NODE_RANK": "-1"}, 2, "NODE_RANK=-1 is out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"BENCHCTL_OUTPUT_DIR": t.TempDir()}
			for k, v := range tc.env {
				env[k] = v
			}
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, func(k string) string { return env[k] }, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.errText) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.errText)
			}
			if tc.code == 0 {
				checkOutput(t, 0, 1, stdout.String(), env["BENCHCTL_OUTPUT_DIR"])
			}
		})
	}
}

// TestRunThreeRanks runs the whole program as three ranks over loopback.
func TestRunThreeRanks(t *testing.T) {
	port := fmt.Sprint(freePort(t))
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	stdouts := make([]bytes.Buffer, 3)
	stderrs := make([]bytes.Buffer, 3)
	codes := make([]int, 3)
	onRanks(3, func(r int) error {
		env := map[string]string{"NODE_RANK": fmt.Sprint(r), "NNODES": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "BENCHCTL_OUTPUT_DIR": dirs[r]}
		codes[r] = run([]string{"--size", "1M", "--iters", "2", "--connect-timeout", "20s"}, func(k string) string { return env[k] }, &stdouts[r], &stderrs[r])
		return nil
	})
	for r := range 3 {
		if codes[r] != 0 {
			t.Fatalf("rank %d: exit status %d; stderr:\n%s", r, codes[r], stderrs[r].String())
		}
		checkOutput(t, r, 3, stdouts[r].String(), dirs[r])
	}
}

// checkOutput checks a successful rank's output: rank 0's performance line and CSV, and
// that the other ranks report neither (the bandwidth is one figure for the job).
func checkOutput(t *testing.T, rank, nnodes int, stdout, dir string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := strings.Fields(lines[len(lines)-1])
	isPerf := len(last) == 3 && last[0] == "performance:" && last[2] == "busbw_GBps"
	if (rank == 0) != isPerf || strings.Count(stdout, "performance:") > 1 {
		t.Errorf("rank %d: stdout %q", rank, stdout)
	}
	data, err := os.ReadFile(filepath.Join(dir, "allreduce.csv"))
	if rank != 0 {
		if err == nil {
			t.Errorf("rank %d wrote allreduce.csv", rank)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("allreduce.csv: %v\n%s", err, data)
	}
	want := []string{"model,performance,metric,status,node_rank,nnodes,size_bytes,iterations,mean_seconds", "allreduce_busbw", "allreduce_algbw"}
	for i, r := range recs {
		if i == 0 && strings.Join(r, ",") != want[0] || i > 0 && (r[0] != want[i] || r[2] != "GB/s" || r[4] != "0" || r[5] != fmt.Sprint(nnodes)) {
			t.Errorf("allreduce.csv row %d = %q", i, r)
		}
	}
}

package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// naive is the textbook triple loop, the reference for matmul.
func naive(a, b []float64, n int) []float64 {
	c := make([]float64, n*n)
	for i := range n {
		for j := range n {
			for k := range n {
				c[i*n+j] += a[i*n+k] * b[k*n+j]
			}
		}
	}
	return c
}

func TestMatmul(t *testing.T) {
	cases := []struct{ n, block, threads int }{
		{1, 64, 1}, {7, 3, 2}, {64, 16, 4}, {65, 16, 3}, {100, 64, 8}, {33, 1, 2},
	}
	for _, tc := range cases {
		a, b, c := make([]float64, tc.n*tc.n), make([]float64, tc.n*tc.n), make([]float64, tc.n*tc.n)
		fillMatrix(a, 1)
		fillMatrix(b, 2)
		matmul(c, a, b, tc.n, tc.block, tc.threads)
		want := naive(a, b, tc.n)
		for i := range c {
			if d := c[i] - want[i]; d > 1e-12 || d < -1e-12 {
				t.Fatalf("n=%d block=%d threads=%d: C[%d] = %g, want %g", tc.n, tc.block, tc.threads, i, c[i], want[i])
			}
		}
		if err := checkMatmul(c, a, b, tc.n, 16); err != nil {
			t.Errorf("n=%d: checkMatmul: %v", tc.n, err)
		}
		c[len(c)-1] += 1 // the bottom-right corner is checked too
		if err := checkMatmul(c, a, b, tc.n, 4); err == nil {
			t.Errorf("n=%d: checkMatmul missed a wrong element", tc.n)
		}
	}
}

func TestStreamKernels(t *testing.T) {
	for _, tc := range []struct{ n, threads int }{{1, 1}, {10, 3}, {1000, 4}, {3, 8}} {
		a, b, c := make([]float64, tc.n), make([]float64, tc.n), make([]float64, tc.n)
		fillStream(a, b, c, tc.threads)
		triad(a, b, c, 3, tc.threads)
		if err := checkTriad(a, b, c, 3); err != nil {
			t.Errorf("n=%d threads=%d: %v", tc.n, tc.threads, err)
		}
		copyKernel(a, b, tc.threads)
		if err := checkCopy(a, b); err != nil {
			t.Errorf("n=%d threads=%d: %v", tc.n, tc.threads, err)
		}
		a[tc.n-1] = -1
		if checkTriad(a, b, c, 3) == nil || checkCopy(a, b) == nil {
			t.Errorf("n=%d: a wrong last element went unnoticed", tc.n)
		}
	}
}

func TestRun(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		code    int
		rows    []string // models in the CSV, when code is 0
		errText string
	}{
		{"small", []string{"--n", "40", "--mem-mib", "1", "--reps", "2"}, map[string]string{"NODE_RANK": "1", "NNODES": "2"}, 0,
			[]string{"cpubench_matmul_gflops", "cpubench_triad", "cpubench_copy"}, "node rank 1 of 2"},
		{"no copy", []string{"--n", "8", "--mem-mib", "1", "--reps", "1", "--copy=false", "--threads", "3"}, nil, 0,
			[]string{"cpubench_matmul_gflops", "cpubench_triad"}, "3 threads"},
		{"bad n", []string{"--n", "0"}, nil, 2, nil, "--n 0: must be between"},
		{"bad reps", []string{"--reps", "two"}, nil, 2, nil, `invalid value "two" for flag -reps`},
		{"bad threads", []string{"--threads", "-1"}, nil, 2, nil, "--threads -1"},
		{"extra args", []string{"x"}, nil, 2, nil, "unexpected arguments"},
		{"bad NNODES", nil, map[string]string{"NNODES": "many"}, 2, nil, `NNODES="many"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"BENCHCTL_OUTPUT_DIR": dir}
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
			if tc.code != 0 {
				return
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			last := strings.Fields(lines[len(lines)-1])
			if len(last) != 3 || last[0] != "performance:" || last[2] != "GFLOP/s" {
				t.Errorf("last stdout line %q", lines[len(lines)-1])
			}
			f, err := os.Open(filepath.Join(dir, "cpubench.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if h := strings.Join(recs[0], ","); h != "model,performance,metric,status,node_rank,nnodes,problem,threads,best_seconds" {
				t.Errorf("header %q", h)
			}
			if len(recs)-1 != len(tc.rows) {
				t.Fatalf("%d rows, want %d", len(recs)-1, len(tc.rows))
			}
			for i, model := range tc.rows {
				r := recs[i+1]
				if v, err := strconv.ParseFloat(r[1], 64); r[0] != model || err != nil || v <= 0 || r[3] != "SUCCESS" {
					t.Errorf("row %d = %q, want model %s with a positive performance", i, r, model)
				}
			}
		})
	}
}

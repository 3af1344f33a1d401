package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchctl/benchctl/tests/testbed"
)

// benchPrograms are the programs under bench/, each with the tiny sizes it runs once with
// here, what its output must say, and whether it submits Slurm jobs (those run at the same
// time, to keep the programs' part of this test at about half a minute).
var benchPrograms = []struct {
	name  string
	args  []string // -benchctl / -bin are added where the program takes one
	flag  string   // the program's flag for the benchctl binary, if any
	want  string
	slurm bool
}{
	{"collect", []string{"-nodes", "10", "-reps", "1"}, "-benchctl", "collect wall time: median", false},
	{"fanout", []string{"-size", "1", "-ranks", "2,3", "-reps", "1"}, "", "| 3 |", false},
	{"image", []string{"-size", "1", "-reps", "1"}, "", "warm Ensure (image present)", false},
	{"run", []string{"-reps", "1", "-trials", "3"}, "-benchctl", "| each trial of a 1-node experiment of 3 trials", false},
	{"process", []string{"-reps", "2"}, "-benchctl", "| step of benchctl run (ends at the mark) | median |", false},
	{"distribution", []string{"-size", "1", "-reps", "1"}, "-bin", "rank 0's image phase", true},
	{"supervise", []string{"-reps", "1"}, "-benchctl", "median over 1: stopped", true},
	{"trials", []string{"-trials", "2", "-reps", "1"}, "-benchctl", "turnaround: last die of trial k", true},
	{"agent", []string{"-n", "5"}, "", "| 5 remote launches of /bin/true on n2 |", false},
}

// TestBenchPrograms runs every program under bench/ once, with tiny sizes, as its doc
// comment says: from the checkout's root after make build examples, on the testbed as it is
// when started (no image or tag another test left behind is assumed). A program added to
// bench/ without a line in benchPrograms fails the test.
func TestBenchPrograms(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	root := repoPath(t, "")
	dirs, err := filepath.Glob(filepath.Join(root, "bench", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, d := range dirs {
		have = append(have, filepath.Base(filepath.Dir(d)))
	}
	var listed []string
	for _, p := range benchPrograms {
		listed = append(listed, p.name)
	}
	slices.Sort(have)
	slices.Sort(listed)
	if !slices.Equal(have, listed) {
		t.Fatalf("bench/ has the programs %v; this test runs %v", have, listed)
	}
	if _, err := os.Stat(filepath.Join(root, "models", "dummy", "bin", "dummy")); err != nil {
		t.Fatalf("the examples are not built (make build examples): %v", err)
	}
	progs := t.TempDir()
	build := exec.Command("go", "build", "-o", progs+string(filepath.Separator), "./bench/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./bench/...: %v\n%s", err, out)
	}
	// run runs one program and says what went wrong, or "".
	run := func(name string, args []string, want string) (took time.Duration, problem string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(progs, name), args...)
		cmd.Dir = root // as the doc comments run them: go run ./bench/NAME in the checkout's root
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			return time.Since(start), fmt.Sprintf("%s %v: %v; want %q in its output:\n%s", name, args, err, want, out)
		}
		return time.Since(start), ""
	}
	type result struct {
		name    string
		took    time.Duration
		problem string
	}
	results := make(chan result, len(benchPrograms))
	var slurm sync.WaitGroup
	for _, p := range benchPrograms {
		args := slices.Clone(p.args)
		if p.flag != "" {
			args = append(args, p.flag, bin)
		}
		if p.slurm { // all at once, whatever go test's -parallel
			slurm.Go(func() {
				took, problem := run(p.name, args, p.want)
				results <- result{p.name, took, problem}
			})
			continue
		}
		took, problem := run(p.name, args, p.want)
		results <- result{p.name, took, problem}
	}
	slurm.Wait()
	close(results)
	for r := range results {
		t.Logf("%s: %s", r.name, r.took.Round(time.Millisecond))
		if r.problem != "" {
			t.Error(r.problem)
		}
	}
}

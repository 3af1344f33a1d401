package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/tests/testbed"
)

// maxCollectRSS is the most memory collect may use on any input (its peak resident set).
const maxCollectRSS = 256 << 20

// hostileShared copies the hostile-folder corpus (tests/fixtures/hostile) into a fresh
// shared directory and adds what git cannot hold: FIFOs, links that lead out, and results
// CSVs just under the 64 MiB cap.
func hostileShared(t *testing.T) string {
	t.Helper()
	shared := t.TempDir()
	src := filepath.Join("fixtures", "hostile")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(shared, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	l := jobdir.Layout{Shared: shared}
	mk := func(p string) string { // p: a path of l's, whose folder mk makes
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := func(p string) {
		if err := syscall.Mkfifo(mk(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status := func(job string, rank int, host string) string {
		return fmt.Sprintf(`{"version":1,"job":%q,"rank":%d,"host":%q,"world":3,"outcome":"success","startedAt":"2026-11-24T08:00:00Z","finishedAt":"2026-11-24T08:05:00Z","benchmarks":[{"name":"b","outcome":"success","log":"b.log","durationSeconds":1}]}`, job, rank, host)
	}
	jobJSON := func(id string, world int) string {
		nodes := make([]string, world)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("n%d", i+1)
		}
		return fmt.Sprintf(`{"version":2,"job":%q,"world":%d,"nodes":["%s"],"source":"slurm","manifest":{"name":"hostile","benchmarks":[{"name":"b","results":"b.csv"}]}}`,
			id, world, strings.Join(nodes, `","`))
	}
	write := func(p, data string) {
		if err := os.WriteFile(mk(p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// FIFOs where job.json, a status, a log and a results CSV should be: each blocked
	// collect forever.
	fifo(l.Job("fifos", 0).JobFile())
	fifo(l.Job("fifos", 0).Node(0, "n1").Status())
	write(l.Job("fifos", 0).Node(1, "n2").Status(), status("fifos", 1, "n2"))
	fifo(l.Job("fifos", 0).Node(1, "n2").Log("b"))
	fifo(filepath.Join(l.Job("fifos", 0).Node(1, "n2").Results("b"), "b.csv"))
	// A failed node whose diagnostics summary (which the report quotes) is a FIFO.
	write(l.Job("fifos", 0).Node(2, "n3").Status(), strings.Replace(strings.Replace(status("fifos", 2, "n3"), `"outcome":"success"`, `"outcome":"failure","exitCode":3`, 1),
		`"log":"b.log"`, `"log":"b.log","diagnostics":"diagnostics/b"`, 1))
	write(filepath.Join(l.Job("fifos", 0).Node(2, "n3").Results("b"), "b.csv"), "model,performance\nb,1\n")
	fifo(filepath.Join(l.Job("fifos", 0).Node(2, "n3").Diagnostics("b"), jobdir.DiagSummaryFile))

	// Links that lead out of the node folder: a results folder, a status, a log.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "b.csv"), []byte("model,performance\nstolen,666\n"), 0o644)
	os.WriteFile(filepath.Join(outside, jobdir.StatusFile), []byte(status("links", 1, "n2")), 0o644)
	write(l.Job("links", 0).JobFile(), jobJSON("links", 3))
	write(l.Job("links", 0).Node(0, "n1").Status(), status("links", 0, "n1"))
	os.Symlink(outside, mk(l.Job("links", 0).Node(0, "n1").Results("b")))
	os.Symlink(filepath.Join(outside, jobdir.StatusFile), mk(l.Job("links", 0).Node(1, "n2").Status()))
	write(l.Job("links", 0).Node(2, "n3").Status(), status("links", 2, "n3"))
	os.Symlink(filepath.Join(outside, "b.csv"), mk(l.Job("links", 0).Node(2, "n3").Log("b")))

	// Three results CSVs of 63 MiB each (under the 64 MiB cap).
	write(l.Job("huge", 0).JobFile(), jobJSON("huge", 3))
	for r := range 3 {
		write(l.Job("huge", 0).Node(r, fmt.Sprintf("n%d", r+1)).Status(), status("huge", r, fmt.Sprintf("n%d", r+1)))
		f, err := os.Create(mk(filepath.Join(l.Job("huge", 0).Node(r, fmt.Sprintf("n%d", r+1)).Results("b"), "b.csv")))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		n, _ := w.WriteString("model,performance,metric,batch\n")
		for i := 0; n < 63<<20-64; i++ {
			k, _ := fmt.Fprintf(w, "m%d,%d.5,samples_per_second,%d\n", i, 1000+i%97, i%64)
			n += k
		}
		w.Flush()
		f.Close()
	}
	return shared
}

// collectRSS runs benchctl collect and returns its exit code, stderr and peak memory.
func collectRSS(t *testing.T, bin, shared, job string, timeout time.Duration) (int, string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "collect", job, "--shared-dir", shared, "-o", "csv")
	cmd.Env = append(os.Environ(), "BENCHCTL_SHARED_DIR=")
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("collect %s did not end within %s (blocked?); stderr:\n%s", job, timeout, errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	return code, errb.String(), rss
}

// Collect over the hostile-folder corpus: every job ends (none blocks), with a clear
// problem per damaged node, never a crash, and within the memory bound.
func TestCollectHostileFolders(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	shared := hostileShared(t)
	cases := []struct {
		job   string
		codes []int    // acceptable exit codes
		want  []string // in summary.json
	}{
		{"world2e9", []int{0, 3}, []string{"2000000000"}},
		{"damaged", []int{3}, []string{"job.json unreadable", "status.json unreadable", "not-a-node"}},
		{"longlines", []int{3}, []string{"EEEE"}},
		{"escape", []int{3}, []string{"outside its folder"}},
		{"fifos", []int{3}, []string{"FIFO"}},
		{"links", []int{3}, []string{"symbolic link"}},
		{"huge", []int{0, 3}, []string{"rows; only the first 10000 are used"}},
	}
	var worst int64
	for _, c := range cases {
		t.Run(c.job, func(t *testing.T) {
			code, stderr, rss := collectRSS(t, bin, shared, c.job, time.Minute)
			worst = max(worst, rss)
			t.Logf("collect %s: exit %d, peak memory %d MiB", c.job, code, rss>>20)
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("collect crashed:\n%s", stderr)
			}
			ok := false
			for _, want := range c.codes {
				ok = ok || code == want
			}
			if !ok {
				t.Fatalf("exit %d, want one of %v; stderr:\n%s", code, c.codes, tail(stderr, 3000))
			}
			if rss > maxCollectRSS {
				t.Errorf("peak memory %d MiB, over the %d MiB bound", rss>>20, maxCollectRSS>>20)
			}
			summary, err := os.ReadFile(jobdir.Layout{Shared: shared}.Job(c.job, 0).Output(jobdir.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(summary), w) {
					t.Errorf("summary.json does not mention %q:\n%s", w, tail(string(summary), 1500))
				}
			}
			if strings.Contains(string(summary), "stolen") {
				t.Errorf("summary.json shows a value read through a link out of the node folder")
			}
			for _, f := range []string{jobdir.SummaryFile, jobdir.ReportFile} {
				if st, err := os.Stat(jobdir.Layout{Shared: shared}.Job(c.job, 0).Output(f)); err == nil && st.Size() > 4<<20 {
					t.Errorf("%s is %d MiB: not readable", f, st.Size()>>20)
				}
			}
		})
	}
	t.Logf("peak memory of collect over the corpus: %d MiB", worst>>20)
}

// Ctrl-C stops a collect that is reading big CSVs within a few seconds.
func TestCollectStopsOnInterrupt(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	shared := hostileShared(t)
	cmd := exec.Command(bin, "collect", "huge", "--shared-dir", shared)
	cmd.Env = append(os.Environ(), "BENCHCTL_SHARED_DIR=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		t.Logf("collect stopped %s after the interrupt", time.Since(sent).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("collect ignored the interrupt for 5 s")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

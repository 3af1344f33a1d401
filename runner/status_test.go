package runner

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner/cleanup"
)

// A status.json that cannot be written is reported: logged once per distinct error, and
// kept for Run to turn into a failure. (Before: every write error was dropped.)
func TestStatusWriteFailuresAreReported(t *testing.T) {
	dir := t.TempDir()
	gone := testNodeFolder(t, dir, "1", 0, "n1")
	if err := os.Remove(gone.Path); err != nil { // the node folder removed under the run
		t.Fatal(err)
	}
	var logs bytes.Buffer
	f := newStatusFile(gone, Node{JobID: "1", Host: "n1", World: 1})
	f.log = slog.New(slog.NewTextHandler(&logs, nil))
	for range 5 {
		f.phase("image")(nil)
		f.updateNow(func(*Status) {})
	}
	if f.writeErr() == nil {
		t.Fatal("the write error was dropped")
	}
	if n := strings.Count(logs.String(), "could not write status.json"); n != 1 {
		t.Errorf("%d log lines for one error, want 1:\n%s", n, logs.String())
	}
	ok := newStatusFile(testNodeFolder(t, dir, "2", 0, "n1"), Node{JobID: "1", Host: "n1", World: 1})
	ok.phase("image")(nil)
	ok.updateNow(func(*Status) {})
	if ok.writeErr() != nil {
		t.Fatal(ok.writeErr())
	}
}

// The runner's writer and collect's reader (jobdir.ReadStatus, which results uses) agree on
// every state a node can end in, and on a node still running.
func TestStatusRoundTripEveryState(t *testing.T) {
	cases := []struct {
		name    string
		act     func(f *statusFile)
		outcome string
		running bool
	}{
		{"running", func(f *statusFile) { f.phase(jobdir.PhaseRun) }, OutcomeRunning, true},
		{"success", func(f *statusFile) { f.phase(jobdir.PhaseRun)(nil); f.finish(OutcomeSuccess, 0, nil) }, OutcomeSuccess, false},
		{"failure", func(f *statusFile) {
			f.phase(jobdir.PhaseImage)(errors.New("build failed"))
			f.finish(OutcomeFailure, 2, errors.New("build failed"))
		}, OutcomeFailure, false},
		{"timeout", func(f *statusFile) { f.finish(OutcomeTimeout, 3, errors.New("timed out after 1m")) }, OutcomeTimeout, false},
		{"cancelled", func(f *statusFile) { f.phase(jobdir.PhaseRun); f.finish(OutcomeCancelled, 1, errors.New("SIGTERM")) }, OutcomeCancelled, false},
		{"aborted benchmark", func(f *statusFile) {
			f.update(func(s *Status) {
				s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "b", Outcome: OutcomeAborted, Error: "aborted: rank 2 failed"})
			})
			f.finish(OutcomeFailure, 3, errors.New("aborted: rank 2 failed"))
		}, OutcomeFailure, false},
		{"skipped benchmark", func(f *statusFile) {
			f.update(func(s *Status) {
				s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "b", Outcome: OutcomeSkipped})
			})
			f.finish(OutcomeSuccess, 0, nil)
		}, OutcomeSuccess, false},
		{"lost (recorded by cleanup)", func(f *statusFile) {
			f.phase(jobdir.PhaseRun)
			f.update(func(s *Status) { cleanup.EndStatus(s, OutcomeLost, "lost: killed", time.Now().UTC()) })
		}, OutcomeLost, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nf := testNodeFolder(t, t.TempDir(), "9", 2, "n3")
			path := nf.Status()
			f := newStatusFile(nf, Node{JobID: "9", Attempt: 1, Rank: 2, Host: "n3", World: 4})
			c.act(f)
			f.updateNow(func(*Status) {}) // what is waiting for statusCoalesce
			got, err := jobdir.ReadStatus(path)
			if err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			want := f.s
			f.mu.Unlock()
			if got.Outcome != c.outcome || got.Running() != c.running || got.Version != jobdir.StatusVersion ||
				got.Rank != 2 || got.Attempt != 1 || len(got.Phases) != len(want.Phases) || len(got.Benchmarks) != len(want.Benchmarks) ||
				got.Error != want.Error || got.ExitCode != want.ExitCode {
				t.Fatalf("read back %+v\nwrote %+v", got, want)
			}
			if !slices.Contains(jobdir.NodeOutcomes, got.Outcome) {
				t.Errorf("outcome %q is not one of jobdir.NodeOutcomes", got.Outcome)
			}
			for _, b := range got.Benchmarks {
				if !slices.Contains(jobdir.BenchOutcomes, b.Outcome) {
					t.Errorf("benchmark outcome %q is not one of jobdir.BenchOutcomes", b.Outcome)
				}
			}
		})
	}
}

func TestResultsMode(t *testing.T) {
	for user, want := range map[string]os.FileMode{"": 0o755, "root": 0o755, "0": 0o755, "0:0": 0o755, "4242": 0o755, "4242:100": 0o755,
		"1000": os.ModeSticky | 0o777, "nobody": os.ModeSticky | 0o777, "1000:1000": os.ModeSticky | 0o777} {
		if got := resultsMode(user, 4242); got != want {
			t.Errorf("resultsMode(%q) = %v, want %o", user, got, want)
		}
	}
	nf := testNodeFolder(t, t.TempDir(), "1", 0, "n1")
	dir := nf.Results("b")
	if err := makeResultsDir(nf, "b", "1000", nil); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	if os.Getuid() != 1000 && st.Mode()&(os.ModeSticky|0o777) != os.ModeSticky|0o777 {
		t.Errorf("a results folder for another user is %v, want sticky and writable", st.Mode())
	}
	dir2 := nf.Results("c")
	if err := makeResultsDir(nf, "c", "", nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir2); st.Mode().Perm() != 0o755 || st.Mode()&os.ModeSticky != 0 {
		t.Errorf("a results folder for root or this user is %v, want 0755 (it was 0777 without the sticky bit)", st.Mode())
	}
}

// Progress written within statusCoalesce of each other is one write, holding the last of
// them, and lands without another change to push it; a benchmark's start (updateNow) and
// the node's end are written at once. (Before: every change was a write of its own, seven
// before a warm run's container was created.)
func TestStatusProgressIsCoalesced(t *testing.T) {
	nf := testNodeFolder(t, t.TempDir(), "5", 0, "n1")
	f := newStatusFile(nf, Node{JobID: "5", Host: "n1", World: 1})
	inode := func() uint64 {
		fi, err := os.Stat(nf.Status())
		if err != nil {
			return 0
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	f.updateNow(func(*Status) {})
	first := inode()
	if first == 0 {
		t.Fatal("updateNow wrote nothing")
	}
	for _, p := range []string{"context", "image", "ready", "run"} {
		f.phase(p)(nil)
	}
	if inode() != first {
		t.Fatal("progress was written at once, change by change")
	}
	deadline := time.Now().Add(10 * time.Second)
	for inode() == first {
		if time.Now().After(deadline) {
			t.Fatal("the waiting progress was never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, err := jobdir.ReadStatus(nf.Status())
	if err != nil || len(st.Phases) != 4 || st.Phases[3].Name != "run" || st.Phases[3].FinishedAt == nil {
		t.Fatalf("%v %+v", err, st)
	}
	f.phase("results")
	f.finish(OutcomeSuccess, 0, nil)
	if st, err := jobdir.ReadStatus(nf.Status()); err != nil || st.Outcome != OutcomeSuccess || len(st.Phases) != 5 {
		t.Fatalf("the node's end was not written at once: %v %+v", err, st)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flush != nil {
		t.Error("a progress write still waits after the node's end")
	}
}

package nodestatus

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
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
	f := New(gone, "1", 0, 0, "n1", 1)
	f.SetLog(slog.New(slog.NewTextHandler(&logs, nil)))
	for range 5 {
		f.Phase("image")(nil)
		f.UpdateNow(func(*Status) {})
	}
	if f.WriteErr() == nil {
		t.Fatal("the write error was dropped")
	}
	if n := strings.Count(logs.String(), "could not write status.json"); n != 1 {
		t.Errorf("%d log lines for one error, want 1:\n%s", n, logs.String())
	}
	ok := New(testNodeFolder(t, dir, "2", 0, "n1"), "1", 0, 0, "n1", 1)
	ok.Phase("image")(nil)
	ok.UpdateNow(func(*Status) {})
	if ok.WriteErr() != nil {
		t.Fatal(ok.WriteErr())
	}
}

// The runner's writer and collect's reader (jobdir.ReadStatus, which results uses) agree on
// every state a node can end in, and on a node still running.
func TestStatusRoundTripEveryState(t *testing.T) {
	cases := []struct {
		name    string
		act     func(f *File)
		outcome string
		running bool
	}{
		{"running", func(f *File) { f.Phase(jobdir.PhaseRun) }, jobdir.OutcomeRunning, true},
		{"success", func(f *File) { f.Phase(jobdir.PhaseRun)(nil); f.Finish(jobdir.OutcomeSuccess, 0, nil) }, jobdir.OutcomeSuccess, false},
		{"failure", func(f *File) {
			f.Phase(jobdir.PhaseImage)(errors.New("build failed"))
			f.Finish(jobdir.OutcomeFailure, 2, errors.New("build failed"))
		}, jobdir.OutcomeFailure, false},
		{"timeout", func(f *File) { f.Finish(jobdir.OutcomeTimeout, 3, errors.New("timed out after 1m")) }, jobdir.OutcomeTimeout, false},
		{"cancelled", func(f *File) {
			f.Phase(jobdir.PhaseRun)
			f.Finish(jobdir.OutcomeCancelled, 1, errors.New("SIGTERM"))
		}, jobdir.OutcomeCancelled, false},
		{"aborted benchmark", func(f *File) {
			f.Update(func(s *Status) {
				s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "b", Outcome: jobdir.OutcomeAborted, Error: "aborted: rank 2 failed"})
			})
			f.Finish(jobdir.OutcomeFailure, 3, errors.New("aborted: rank 2 failed"))
		}, jobdir.OutcomeFailure, false},
		{"skipped benchmark", func(f *File) {
			f.Update(func(s *Status) {
				s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "b", Outcome: jobdir.OutcomeSkipped})
			})
			f.Finish(jobdir.OutcomeSuccess, 0, nil)
		}, jobdir.OutcomeSuccess, false},
		{"lost (recorded by cleanup)", func(f *File) {
			f.Phase(jobdir.PhaseRun)
			f.Update(func(s *Status) { cleanup.EndStatus(s, jobdir.OutcomeLost, "lost: killed", time.Now().UTC()) })
		}, jobdir.OutcomeLost, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nf := testNodeFolder(t, t.TempDir(), "9", 2, "n3")
			path := nf.Status()
			f := New(nf, "9", 1, 2, "n3", 4)
			c.act(f)
			f.UpdateNow(func(*Status) {}) // what is waiting for statusCoalesce
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

// Progress written within statusCoalesce of each other is one write, holding the last of
// them, and lands without another change to push it; a benchmark's start (updateNow) and
// the node's end are written at once. (Before: every change was a write of its own, seven
// before a warm run's container was created.)
func TestStatusProgressIsCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // the timer's time is the bubble's: no wait, no race with a busy machine
		nf := testNodeFolder(t, t.TempDir(), "5", 0, "n1")
		f := New(nf, "5", 0, 0, "n1", 1)
		inode := func() uint64 {
			fi, err := os.Stat(nf.Status())
			if err != nil {
				return 0
			}
			return fi.Sys().(*syscall.Stat_t).Ino
		}
		f.UpdateNow(func(*Status) {})
		first := inode()
		if first == 0 {
			t.Fatal("UpdateNow wrote nothing")
		}
		for _, p := range []string{"context", "image", "ready", "run"} {
			f.Phase(p)(nil)
		}
		time.Sleep(statusCoalesce - time.Millisecond)
		synctest.Wait()
		if inode() != first {
			t.Fatal("progress was written before statusCoalesce, change by change")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if inode() == first {
			t.Fatal("the waiting progress was not written statusCoalesce after the first change")
		}
		st, err := jobdir.ReadStatus(nf.Status())
		if err != nil || len(st.Phases) != 4 || st.Phases[3].Name != "run" || st.Phases[3].FinishedAt == nil {
			t.Fatalf("%v %+v", err, st)
		}
		f.Phase("results")
		f.Finish(jobdir.OutcomeSuccess, 0, nil)
		if st, err := jobdir.ReadStatus(nf.Status()); err != nil || st.Outcome != jobdir.OutcomeSuccess || len(st.Phases) != 5 {
			t.Fatalf("the node's end was not written at once: %v %+v", err, st)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.flush != nil {
			t.Error("a progress write still waits after the node's end")
		}
	})
}

package nodestatus

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

// trialWrites runs n trials through a node's status file as runOne records them (a record
// appended when the trial starts, moved to the trial log when it ends) and returns the
// bytes written per trial (status.json at every write, and the log) and status.json's size
// at the end.
func trialWrites(t testing.TB, n int) (perTrial float64, statusSize int64) {
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 0, "n1")
	f := New(nf, "1", 0, 0, "n1", 1)
	nd := jobdir.Layout{Shared: shared}.Job("1", 0).Node(0, "n1")
	var written int64
	size := func() int64 {
		st, err := os.Stat(nd.Status())
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	for seq := 1; seq <= n; seq++ {
		start := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
		f.UpdateNow(func(s *Status) { // a trial's start is written at once, as runOne does
			s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "train", Outcome: jobdir.OutcomeRunning, StartedAt: start,
				Log: jobdir.LogName(jobdir.TrialRunName("train", seq)), Trial: seq, Variant: "batch=32,nodes=2", VariantTrial: seq, GPUs: 8,
				ImageID: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
		})
		written += size()
		if err := f.EndTrial(func(b *BenchmarkStatus) {
			end := start.Add(time.Minute)
			b.Outcome, b.FinishedAt, b.DurationSeconds = jobdir.OutcomeSuccess, &end, 60
		}); err != nil {
			t.Fatal(err)
		}
		f.UpdateNow(func(*Status) {}) // its end, at most statusCoalesce later (counted as a write of its own)
		written += size()
	}
	log, err := os.Stat(nd.TrialLog())
	if err != nil {
		t.Fatal(err)
	}
	written += log.Size()
	return float64(written) / float64(n), size()
}

// A trial's record costs the same bytes to write at the 1,000th trial as at the 10th, and
// status.json keeps its size: before the trial log, status.json grew by a record per trial
// and was rewritten whole twice per trial (49 GB per node at 10,000 trials; over collect's
// 16 MiB cap at about 34,500, when every trial read FAILURE).
func TestTrialRecordsCostConstantBytes(t *testing.T) {
	p10, s10 := trialWrites(t, 10)
	p1000, s1000 := trialWrites(t, 1000)
	if p1000 > p10*1.05 || s1000 > s10+8 {
		t.Errorf("per trial: %.0f bytes at 10 trials, %.0f at 1,000; status.json %d and %d bytes", p10, p1000, s10, s1000)
	}
	t.Logf("bytes written per trial: %.0f at 10 trials, %.0f at 1,000; status.json %d bytes", p10, p1000, s1000)
}

// The records read back, merged, are the trials in their order; a trial log torn in its
// last line (a node killed while it wrote) loses that line only.
func TestTrialLogReadsBack(t *testing.T) {
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 0, "n1")
	f := New(nf, "1", 0, 0, "n1", 1)
	nd := jobdir.Layout{Shared: shared}.Job("1", 0).Node(0, "n1")
	f.Update(func(s *Status) {
		s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "prep", Outcome: jobdir.OutcomeSuccess})
	})
	for seq := 1; seq <= 3; seq++ {
		f.Update(func(s *Status) {
			s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "train", Outcome: jobdir.OutcomeRunning, Trial: seq})
		})
		if err := f.EndTrial(func(b *BenchmarkStatus) { b.Outcome = jobdir.OutcomeSuccess }); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.AddTrial(BenchmarkStatus{Name: "train", Outcome: jobdir.OutcomeSkipped, Trial: 4}); err != nil {
		t.Fatal(err)
	}
	f.UpdateNow(func(s *Status) {
		s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: "train", Outcome: jobdir.OutcomeRunning, Trial: 5})
	})
	st, err := jobdir.ReadNodeStatus(&safefile.Reader{}, nd)
	if err != nil || st.Trials != 4 || len(st.Benchmarks) != 6 {
		t.Fatalf("%v %+v", err, st)
	}
	for i, want := range []int{1, 2, 3, 4, 0, 5} {
		if st.Benchmarks[i].Trial != want {
			t.Errorf("record %d: trial %d, want %d", i, st.Benchmarks[i].Trial, want)
		}
	}
	// A torn last line: the node died in the write.
	fl, _ := os.OpenFile(nd.TrialLog(), os.O_WRONLY|os.O_APPEND, 0)
	fl.WriteString(`{"name":"train","outcome":"succ`)
	fl.Close()
	if st, err := jobdir.ReadNodeStatus(&safefile.Reader{}, nd); err != nil || len(st.Benchmarks) != 6 {
		t.Errorf("a torn last line: %v %d records", err, len(st.Benchmarks))
	}
}

// The bytes a trial costs to record at 100,000 trials (docs/PERFORMANCE.md): go test
// ./runner -run '^$' -bench TrialRecords -benchtime 1x
func BenchmarkTrialRecords(b *testing.B) {
	for _, n := range []int{10, 1000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				per, size := trialWrites(b, n)
				b.ReportMetric(per, "B/trial")
				b.ReportMetric(float64(size), "status-B")
			}
		})
	}
}

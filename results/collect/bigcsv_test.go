package collect

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// Three results CSVs just under the 64 MiB cap took minutes and gigabytes and made
// summary.json and report.html tens of megabytes: now a node's CSV is streamed, its first
// MaxCSVRows rows kept and the rest counted, and the peak heap stays far below 256 MiB.
func TestBigCSVsAreBoundedInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 189 MiB")
	}
	job := resultstest.WriteJob(t, t.TempDir(), "1", 3)
	for r := range 3 {
		resultstest.WriteNode(t, job, r, "success", "")
		writeBigCSV(t, job, r, 63<<20)
	}
	runtime.GC()
	stop := heapPeak() // sample the heap while collect runs
	s := resultstest.Aggregate(t, job)
	written, err := WriteOutputs(jobdir.Dir{Path: job}, s, results.PerfTable(s))
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak heap in use %d MiB", peak>>20)
	if peak > 256<<20 {
		t.Errorf("peak heap %d MiB, over 256 MiB", peak>>20)
	}
	for _, p := range written {
		if st, _ := os.Stat(p); filepath.Base(p) != jobdir.PerfFile && st.Size() > 2<<20 {
			t.Errorf("%s is %d MiB", filepath.Base(p), st.Size()>>20)
		}
	}
	report, _ := os.ReadFile(jobdirtest.At(job).Output(jobdir.ReportFile))
	if !strings.Contains(string(report), "more rows are not shown here: every row is in <a href=\"perf.csv\">perf.csv</a>") {
		t.Error("the report does not say that rows were left out")
	}
	sum, _ := os.ReadFile(jobdirtest.At(job).Output(jobdir.SummaryFile))
	if !strings.Contains(string(sum), `"rowsOmitted": 9000`) && !strings.Contains(string(sum), `"rowsOmitted":9000`) {
		t.Error("summary.json does not count the rows it leaves out")
	}
	b := s.Benchmarks[0]
	if len(b.Rows) != results.MaxCSVRows {
		t.Errorf("%d rows, want the first %d", len(b.Rows), results.MaxCSVRows)
	}
	note := false
	for _, c := range b.Candidates {
		note = note || strings.Contains(c.Problem, "rows; only the first 10000 are used")
	}
	if !note {
		t.Errorf("no NOTE about the rows left out: %+v", b.Candidates)
	}
}

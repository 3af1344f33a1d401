package collect

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

func collect(t *testing.T, shared, job string, attempt int, partial bool) (*Collection, error) {
	t.Helper()
	return Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: job, Attempt: attempt, Partial: partial,
		Aggregate: results.AggregateOptions{Now: resultstest.FixedNow, CollectedBy: "test", Workers: 3}})
}

func TestCollectGolden(t *testing.T) {
	cases := []struct {
		name     string
		job      string
		attempt  int
		partial  bool
		failed   bool
		contains []string // in the table output
	}{
		{name: "best-csv", job: "100", attempt: -1, contains: []string{"train_2", "007", "1-n2", "14000.5"}},
		{name: "header-quirks", job: "200", attempt: -1, contains: []string{"sweep_a", "1.50", " 2.25 ", "quoted, with comma", "007", "3e2", "1-a2"}},
		{name: "all-failed", job: "300", attempt: -1, failed: true, contains: []string{"FAILURE", "no node produced a result"}},
		{name: "missing-node", job: "400", attempt: -1, failed: true, contains: []string{"1-m2 (no status: node never reported"}},
		{name: "requeued-latest", job: "500", attempt: -1, contains: []string{"train_0", "61", "SUCCESS"}},
		{name: "requeued-first", job: "500", attempt: 0, failed: true, contains: []string{"requeued"}},
		{name: "running-partial", job: "600", attempt: -1, partial: true, failed: true, contains: []string{"train_0", "70", "FAILURE", "partial: 1 of 2 nodes still running"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := resultstest.SharedCopy(t)
			col, err := collect(t, shared, c.job, c.attempt, c.partial)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{jobdir.PerfFile, jobdir.SummaryFile, jobdir.ReportFile} {
				if _, err := os.Stat(filepath.Join(col.Dir.Path, f)); err != nil {
					t.Errorf("%s not written: %v", f, err)
				}
			}
			perf, _ := os.ReadFile(filepath.Join(col.Dir.Path, jobdir.PerfFile))
			sum, _ := os.ReadFile(filepath.Join(col.Dir.Path, jobdir.SummaryFile))
			golden(t, c.name+"/perf.csv", perf)
			golden(t, c.name+"/summary.json", sum)
			var tbl bytes.Buffer
			if err := WriteResults(&tbl, results.FormatTable, col.Summary, col.Perf); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+"/table.txt", tbl.Bytes())
			for _, s := range c.contains {
				if !strings.Contains(tbl.String()+string(perf), s) {
					t.Errorf("output lacks %q:\n%s", s, tbl.String())
				}
			}
			err = col.Summary.Err()
			var fe *results.FailedError
			if c.failed != errors.As(err, &fe) {
				t.Fatalf("Err() = %v, want failed=%v", err, c.failed)
			}
			if fe != nil && fe.ExitCode() != 3 {
				t.Fatalf("exit code %d", fe.ExitCode())
			}
			if len(col.Perf.Rows) == 0 {
				t.Fatal("perf.csv has no rows")
			}
		})
	}
}

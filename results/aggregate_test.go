package results

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// writeJob makes a job folder: job.json with one benchmark "b" (results b.csv) and nodes.
func writeJob(t *testing.T, shared, id string, world int) string {
	t.Helper()
	nodes := make([]string, world)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("h%d", i)
	}
	j := jobdirtest.NewJob(t, id, nodes, map[string]any{"name": "t", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv"}}, "gpu": map[string]any{"count": "all"}})
	j.Version = 1
	return jobdirtest.Job(t, jobdir.Layout{Shared: shared}.Job(id, 0), j).Path
}

// nodeOf is the folder writeNode writes for rank: <rank>-h<rank>.
func nodeOf(job string, rank int) jobdir.NodeDir {
	return jobdirtest.At(job).Node(rank, fmt.Sprintf("h%d", rank))
}

// writeNode writes a node folder with a status and, unless csv is "", b.csv.
func writeNode(t *testing.T, job string, rank int, outcome string, csv string) {
	t.Helper()
	nd := nodeOf(job, rank)
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &jobdir.Status{Version: 1, Rank: rank, Host: nd.Host, Outcome: outcome, FinishedAt: &end,
		Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: outcome, DurationSeconds: 1}}}
	if outcome == jobdir.OutcomeRunning {
		st.FinishedAt, st.Benchmarks = nil, nil
	}
	jobdirtest.Mkdir(t, nd.Results("b"))
	jobdirtest.Status(t, nd, st)
	if csv != "" {
		jobdirtest.Result(t, nd, "b", "b.csv", []byte(csv))
	}
}

// aggregate aggregates a job folder written by writeJob (its id is the folder's name).
func aggregate(t *testing.T, job string) *Summary {
	t.Helper()
	s, err := Aggregate(context.Background(), jobdir.Dir{Path: job, JobID: filepath.Base(job)}, AggregateOptions{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// schedulerFunc is a jobdir.Scheduler that answers JobState with a function; Collect
// never waits.
type schedulerFunc func(context.Context, string) (jobdir.SchedulerState, error)

var _ jobdir.Scheduler = schedulerFunc(nil)

func (f schedulerFunc) JobState(ctx context.Context, id string) (jobdir.SchedulerState, error) {
	return f(ctx, id)
}

func (f schedulerFunc) Wait(context.Context, string, func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error) {
	return jobdir.SchedulerState{}, errors.New("collect does not wait")
}

// The summary does not depend on the number of workers (nor on the order they finish in).
func TestAggregateDeterministic(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "9", 300)
	for r := range 300 {
		rows := 1 + r%4
		csv := "model,performance,metric\n"
		for i := range rows {
			csv += fmt.Sprintf("m%d,%d.%03d,x\n", i, 100+r%17, r)
		}
		outcome := jobdir.OutcomeSuccess
		if r%50 == 7 {
			outcome = jobdir.OutcomeFailure
		}
		writeNode(t, job, r, outcome, csv)
	}
	var outs [][]byte
	for _, w := range []int{1, 3, 16} {
		s, err := Aggregate(context.Background(), jobdir.Dir{Path: job, JobID: "9"}, AggregateOptions{Workers: w, Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := EncodeSummary(s)
		csv, _ := EncodeCSV(PerfTable(s))
		outs = append(outs, append(data, csv...))
	}
	for i := 1; i < len(outs); i++ {
		if !bytes.Equal(outs[0], outs[i]) {
			t.Fatal("the summary depends on the number of workers")
		}
	}
}

func TestAggregateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Aggregate(ctx, jobdir.Dir{Path: "testdata/shared/jobs/100", JobID: "100"}, AggregateOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// A node whose rows say "N/A" does not win over a node with numbers, whatever the ranks.
func TestBestCSVPrefersNumbers(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "21", 2)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nm,N/A,u\n")
	writeNode(t, job, 1, jobdir.OutcomeSuccess, "model,performance,metric\nm,100,u\n")
	s := aggregate(t, job)
	b := s.Benchmarks[0]
	if b.Winner == nil || b.Winner.Rank != 1 || b.Status != StatusSuccess {
		t.Fatalf("winner %+v, status %s (%s)", b.Winner, b.Status, b.Reason)
	}
	if !strings.Contains(b.WinnerWhy, "has 1 rows with a value but only 0 numeric") {
		t.Errorf("why: %s", b.WinnerWhy)
	}
}

// A node folder that is a symbolic link (to the real one, or to anything else: it may lead
// outside the job folder) is not read: a problem names it, and its rank never reported.
func TestLinkedNodeFolder(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "22", 2)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nm,1,u\n")
	writeNode(t, job, 1, jobdir.OutcomeSuccess, "model,performance,metric\nm,2,u\n")
	elsewhere := filepath.Join(t.TempDir(), "1-h1")
	if err := os.Rename(nodeOf(job, 1).Path, elsewhere); err != nil {
		t.Fatal(err)
	}
	os.Symlink(elsewhere, nodeOf(job, 1).Path)
	s := aggregate(t, job)
	if b := s.Benchmarks[0]; b.Status != StatusFailure || len(b.Failed) != 1 || b.Failed[0].Rank != 1 || s.Nodes.Reported != 1 {
		t.Fatalf("status %s (%s), failed %+v, nodes %+v", b.Status, b.Reason, b.Failed, s.Nodes)
	}
	if !strings.Contains(strings.Join(s.Problems, "\n"), "nodes/1-h1: a symbolic link") {
		t.Errorf("problems %q", s.Problems)
	}
}

// Columns whose names clash are renamed, never dropped or merged.
func TestPerfTableKeepsClashingColumns(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "23", 1)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric,perf_min,perf_min_csv,Performance,MODEL\nm,1,u,PMIN,OWN,999,OTHER\n")
	s := aggregate(t, job)
	pt := PerfTable(s)
	got := map[string]string{}
	for i, h := range pt.Header {
		if _, dup := got[h]; dup {
			t.Fatalf("column %s twice in %v", h, pt.Header)
		}
		got[h] = pt.Rows[0][i]
	}
	for col, want := range map[string]string{"perf_min_csv": "OWN", "perf_min_csv_csv": "PMIN", "Performance": "999", "MODEL": "OTHER", "performance": "1", "model": "m"} {
		if got[col] != want {
			t.Errorf("%s = %q, want %q (header %v)", col, got[col], want, pt.Header)
		}
	}
}

// Without job.json, a stray folder with a huge rank does not invent missing nodes.
func TestStrayRankWithoutJobJSON(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "24", 1)
	os.Remove(jobdirtest.At(job).JobFile())
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nm,1,u\n")
	writeNode(t, job, 4000000, jobdir.OutcomeSuccess, "model,performance,metric\nm,1,u\n")
	for _, dir := range []string{"0-h0", "4000000-h4000000"} {
		st, _ := jobdir.ReadStatus(jobdirtest.At(job).NodeNamed(dir).Status())
		st.World = 1
		data, _ := json.Marshal(st)
		os.WriteFile(jobdirtest.At(job).NodeNamed(dir).Status(), data, 0o644)
	}
	s := aggregate(t, job)
	if s.Nodes.Expected != 1 || !strings.Contains(strings.Join(s.Problems, "\n"), "node folders go up to rank 4000000, but the status files say the job has 1 nodes") {
		t.Fatalf("expected %d, problems %v", s.Nodes.Expected, s.Problems)
	}
}

// Nodes whose CSVs have other key columns are named in a problem, not silently left out.
func TestOtherKeysAreAProblem(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "25", 2)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric,batch_size\nm,1,u,32\nm,2,u,64\n")
	writeNode(t, job, 1, jobdir.OutcomeSuccess, "model,performance,metric\nm,1,u\n")
	s := aggregate(t, job)
	if len(s.Benchmarks[0].OtherKeys) == 0 || !strings.Contains(strings.Join(s.Problems, "\n"), "benchmark b: other nodes reported rows the winner's CSV does not have") {
		t.Fatalf("otherKeys %v, problems %v", s.Benchmarks[0].OtherKeys, s.Problems)
	}
}

func TestEmptyJobTableHasAFailureRow(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "26", 1)
	os.Remove(jobdirtest.At(job).JobFile())
	s := aggregate(t, job)
	var buf bytes.Buffer
	if err := WriteRows(&buf, false, s); err != nil || !strings.Contains(buf.String(), "FAILURE") || !strings.Contains(buf.String(), noBenchmarksReason) {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}

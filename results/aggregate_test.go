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
	"syscall"
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

// sched is a Slurm that says state of every job ("": it does not know the job).
func sched(state string, active bool, err error) schedulerFunc {
	return func(context.Context, string) (jobdir.SchedulerState, error) {
		st := jobdir.SchedulerState{Known: state != "", State: state, Active: active}
		if st.Known {
			st.Scheduler = "Slurm"
		}
		return st, err
	}
}

func TestCollectRunning(t *testing.T) {
	cases := []struct {
		name      string
		scheduler jobdir.Scheduler
		partial   bool
		wantErr   string // a *RunningError containing this
		failed    string // else: a node failure reason containing this
		warning   string
	}{
		{name: "status files say running", wantErr: "1 node has not finished (1-s2)"},
		{name: "slurm says running", scheduler: sched("RUNNING", true, nil), wantErr: "Slurm says RUNNING"},
		{name: "slurm says running, partial", scheduler: sched("RUNNING", true, nil), partial: true},
		{name: "slurm unknown: status files decide", scheduler: sched("", false, nil), wantErr: "has not finished"},
		{name: "slurm broken: status files decide", scheduler: sched("", false, errors.New("slurmctld down")), wantErr: "has not finished", warning: "slurmctld down"},
		{name: "slurm says it ended: the node was lost", scheduler: sched("FAILED", false, nil), failed: "Slurm says the job is FAILED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := sharedCopy(t)
			col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "600", Attempt: -1, Partial: c.partial, Scheduler: c.scheduler})
			if c.wantErr != "" {
				var re *RunningError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "--partial") {
					t.Fatalf("err = %v, want a *RunningError with %q", err, c.wantErr)
				}
				if _, err := os.Stat(jobdir.Layout{Shared: shared}.Job("600", 0).Output(jobdir.PerfFile)); err == nil {
					t.Fatal("wrote perf.csv for a running job")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.warning != "" && !strings.Contains(strings.Join(col.Warnings, "\n"), c.warning) {
				t.Fatalf("warnings %q", col.Warnings)
			}
			if c.failed != "" {
				if len(col.Summary.NodeFailures) != 1 || !strings.Contains(col.Summary.NodeFailures[0].Reason, c.failed) || col.Summary.Err() == nil {
					t.Fatalf("node failures %+v", col.Summary.NodeFailures)
				}
			}
		})
	}
}

// Without job.json the benchmarks and the node count come from the node folders.
func TestCollectWithoutJobJSON(t *testing.T) {
	shared := sharedCopy(t)
	os.Remove(jobdir.Layout{Shared: shared}.Job("100", 0).JobFile())
	col, err := collect(t, shared, "100", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	s := col.Summary
	if len(s.Benchmarks) != 2 || s.Benchmarks[0].Name != "infer" || s.Benchmarks[1].Name != "train" || s.Nodes.Expected != 3 {
		t.Fatalf("benchmarks %v, nodes %+v", s.Benchmarks, s.Nodes)
	}
	if s.Benchmarks[1].Winner == nil || s.Benchmarks[1].Winner.Rank != 1 || s.Benchmarks[0].Rows[0].Stats.Nodes != 3 {
		t.Fatalf("train winner %+v", s.Benchmarks[1].Winner)
	}
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "no job.json") || s.Image.ID == "" {
		t.Fatalf("problems %q image %+v", s.Problems, s.Image)
	}
}

func TestCollectOddFolders(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "7", 4)
	hdr := "model,performance,metric,status\n"
	writeNode(t, job, 0, jobdir.OutcomeSuccess, hdr+"a,1,x,SUCCESS\nb,N/A,x,SUCCESS\nc,3,x,FAILURE\n")
	writeNode(t, job, 1, jobdir.OutcomeSuccess, hdr+"a,2,x,SUCCESS\nextra,5,x,SUCCESS\n")
	writeNode(t, job, 2, jobdir.OutcomeSuccess, "")
	os.WriteFile(nodeOf(job, 2).Status(), []byte("{garbage"), 0o644)
	os.MkdirAll(jobdirtest.At(job).NodeNamed("not-a-node").Path, 0o755)
	os.WriteFile(jobdirtest.At(job).NodeNamed(".tmp-file").Path, nil, 0o644)
	col, err := collect(t, shared, "7", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	s := col.Summary
	b := s.Benchmarks[0]
	if b.Winner == nil || b.Winner.Rank != 0 {
		t.Fatalf("winner %+v", b.Winner)
	}
	want := map[string]string{"a": StatusFailure, "b": StatusFailure, "c": StatusFailure}
	for _, r := range b.Rows {
		if r.Status != want[r.Model] {
			t.Errorf("row %s: %s", r.Model, r.Status)
		}
	}
	if s.Nodes.Missing != 1 || s.Nodes.Failed != 2 {
		t.Fatalf("nodes %+v", s.Nodes)
	}
	if len(b.OtherKeys) != 1 || b.OtherKeys[0] != "extra x" {
		t.Fatalf("other keys %q", b.OtherKeys)
	}
	reasons := ""
	for _, f := range s.NodeFailures {
		reasons += f.Label() + ": " + f.Reason + "\n"
	}
	for _, w := range []string{"2-h2: status.json unreadable", "3-h3: no status: node never reported"} {
		if !strings.Contains(reasons, w) {
			t.Errorf("node failures lack %q:\n%s", w, reasons)
		}
	}
	if len(s.Problems) != 2 || !strings.Contains(s.Problems[1], "nodes/not-a-node: not a node folder") || !strings.Contains(s.Problems[0], "(extra x)") {
		t.Fatalf("problems %q", s.Problems)
	}
	if s.Status != StatusFailure || len(col.Perf.Rows) != 3 {
		t.Fatalf("status %s rows %d", s.Status, len(col.Perf.Rows))
	}
}

// In a benchmark without failed nodes, each row still needs a number and no FAILURE mark.
func TestRowStatus(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "10", 1)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric,status\na,1,x,SUCCESS\nb,N/A,x,SUCCESS\nc,3,x,failure\nd,,x,\n")
	col, err := collect(t, shared, "10", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "", "b": `performance "N/A" is not a number`, "c": "the benchmark marked this row FAILURE", "d": "no performance value"}
	for _, r := range col.Summary.Benchmarks[0].Rows {
		if !strings.Contains(r.Reason, want[r.Model]) || (want[r.Model] == "") != (r.Status == StatusSuccess) {
			t.Errorf("row %s: %s %q", r.Model, r.Status, r.Reason)
		}
	}
	if col.Summary.Benchmarks[0].Status != StatusSuccess || col.Summary.Err() == nil {
		t.Fatalf("benchmark %s, err %v", col.Summary.Benchmarks[0].Status, col.Summary.Err())
	}
}

// A job where no node folder exists still gets one FAILURE row per benchmark.
func TestCollectNoNodes(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "8", 2)
	os.RemoveAll(jobdirtest.At(job).Nodes())
	col, err := collect(t, shared, "8", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(col.Perf.Rows) != 1 || col.Perf.Rows[0][col.Perf.Col("status")] != StatusFailure || col.Summary.Nodes.Missing != 2 {
		t.Fatalf("rows %q nodes %+v", col.Perf.Rows, col.Summary.Nodes)
	}
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
	if err := WriteResults(&buf, FormatTable, s, PerfTable(s)); err != nil || !strings.Contains(buf.String(), "FAILURE") || !strings.Contains(buf.String(), noBenchmarksReason) {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}

// A result a container left as a link to a host file, or as a FIFO, is not read: collect
// neither copies the host file into perf.csv nor blocks.
func TestCollectReadsOnlyRegularResultFiles(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "700", 3)
	hdr := "model,performance,metric,status\n"
	host := filepath.Join(t.TempDir(), "host.csv")
	os.WriteFile(host, []byte(hdr+"HOSTFILE,99,x,SUCCESS\n"), 0o644)
	writeNode(t, job, 0, jobdir.OutcomeSuccess, hdr+"a,1,x,SUCCESS\n")
	writeNode(t, job, 1, jobdir.OutcomeSuccess, "")
	writeNode(t, job, 2, jobdir.OutcomeSuccess, "")
	if err := os.Symlink(host, filepath.Join(nodeOf(job, 1).Results("b"), "b.csv")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(nodeOf(job, 2).Results("b"), "b.csv"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "700", Attempt: -1})
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("collect blocked on a FIFO")
	}
	perf, err := os.ReadFile(jobdirtest.At(job).Output(jobdir.PerfFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(perf), "HOSTFILE") || !strings.Contains(string(perf), "a,") {
		t.Fatalf("perf.csv:\n%s", perf)
	}
	sum, _ := os.ReadFile(jobdirtest.At(job).Output(jobdir.SummaryFile))
	if !strings.Contains(string(sum), "symbolic link") || !strings.Contains(string(sum), "not a regular file") {
		t.Fatalf("summary.json does not say why the two results were not read:\n%s", sum)
	}
}

// A job run with --benchmarks names the ones it ran in job.json: the others are not
// expected, so a job where they all succeeded succeeds.
func TestCollectOnlyTheSelectedBenchmarks(t *testing.T) {
	for _, selected := range []bool{true, false} {
		shared := t.TempDir()
		job := writeJob(t, shared, "800", 2)
		j := jobdirtest.NewJob(t, "800", []string{"h0", "h1"},
			map[string]any{"name": "t", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv"}, map[string]any{"name": "c", "results": "c.csv"}}})
		j.Version = 1
		if selected {
			j.Benchmarks = []string{"b"}
		}
		jobdirtest.Job(t, jobdirtest.At(job), j)
		hdr := "model,performance,metric,status\n"
		writeNode(t, job, 0, jobdir.OutcomeSuccess, hdr+"a,1,x,SUCCESS\n")
		writeNode(t, job, 1, jobdir.OutcomeSuccess, hdr+"a,2,x,SUCCESS\n")
		col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "800", Attempt: -1})
		if err != nil {
			t.Fatal(err)
		}
		if failed := col.Summary.Err() != nil; failed == selected {
			t.Fatalf("selected %v: summary error %v", selected, col.Summary.Err())
		}
	}
}

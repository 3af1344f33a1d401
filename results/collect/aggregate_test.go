package collect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

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
			shared := resultstest.SharedCopy(t)
			col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "600", Attempt: -1, Partial: c.partial, Scheduler: c.scheduler})
			if c.wantErr != "" {
				var re *results.RunningError
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
	shared := resultstest.SharedCopy(t)
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
	job := resultstest.WriteJob(t, shared, "7", 4)
	hdr := "model,performance,metric,status\n"
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, hdr+"a,1,x,SUCCESS\nb,N/A,x,SUCCESS\nc,3,x,FAILURE\n")
	resultstest.WriteNode(t, job, 1, jobdir.OutcomeSuccess, hdr+"a,2,x,SUCCESS\nextra,5,x,SUCCESS\n")
	resultstest.WriteNode(t, job, 2, jobdir.OutcomeSuccess, "")
	os.WriteFile(resultstest.NodeOf(job, 2).Status(), []byte("{garbage"), 0o644)
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
	want := map[string]string{"a": results.StatusFailure, "b": results.StatusFailure, "c": results.StatusFailure}
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
	if s.Status != results.StatusFailure || len(col.Perf.Rows) != 3 {
		t.Fatalf("status %s rows %d", s.Status, len(col.Perf.Rows))
	}
}

// In a benchmark without failed nodes, each row still needs a number and no FAILURE mark.
func TestRowStatus(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "10", 1)
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric,status\na,1,x,SUCCESS\nb,N/A,x,SUCCESS\nc,3,x,failure\nd,,x,\n")
	col, err := collect(t, shared, "10", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "", "b": `performance "N/A" is not a number`, "c": "the benchmark marked this row FAILURE", "d": "no performance value"}
	for _, r := range col.Summary.Benchmarks[0].Rows {
		if !strings.Contains(r.Reason, want[r.Model]) || (want[r.Model] == "") != (r.Status == results.StatusSuccess) {
			t.Errorf("row %s: %s %q", r.Model, r.Status, r.Reason)
		}
	}
	if col.Summary.Benchmarks[0].Status != results.StatusSuccess || col.Summary.Err() == nil {
		t.Fatalf("benchmark %s, err %v", col.Summary.Benchmarks[0].Status, col.Summary.Err())
	}
}

// A job where no node folder exists still gets one FAILURE row per benchmark.
func TestCollectNoNodes(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "8", 2)
	os.RemoveAll(jobdirtest.At(job).Nodes())
	col, err := collect(t, shared, "8", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(col.Perf.Rows) != 1 || col.Perf.Rows[0][col.Perf.Col("status")] != results.StatusFailure || col.Summary.Nodes.Missing != 2 {
		t.Fatalf("rows %q nodes %+v", col.Perf.Rows, col.Summary.Nodes)
	}
}

// A result a container left as a link to a host file, or as a FIFO, is not read: collect
// neither copies the host file into perf.csv nor blocks.
func TestCollectReadsOnlyRegularResultFiles(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "700", 3)
	hdr := "model,performance,metric,status\n"
	host := filepath.Join(t.TempDir(), "host.csv")
	os.WriteFile(host, []byte(hdr+"HOSTFILE,99,x,SUCCESS\n"), 0o644)
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, hdr+"a,1,x,SUCCESS\n")
	resultstest.WriteNode(t, job, 1, jobdir.OutcomeSuccess, "")
	resultstest.WriteNode(t, job, 2, jobdir.OutcomeSuccess, "")
	if err := os.Symlink(host, filepath.Join(resultstest.NodeOf(job, 1).Results("b"), "b.csv")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(resultstest.NodeOf(job, 2).Results("b"), "b.csv"), 0o644); err != nil {
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
		job := resultstest.WriteJob(t, shared, "800", 2)
		j := jobdirtest.NewJob(t, "800", []string{"h0", "h1"},
			map[string]any{"name": "t", "benchmarks": []any{map[string]any{"name": "b", "results": "b.csv"}, map[string]any{"name": "c", "results": "c.csv"}}})
		j.Version = 1
		if selected {
			j.Benchmarks = []string{"b"}
		}
		jobdirtest.Job(t, jobdirtest.At(job), j)
		hdr := "model,performance,metric,status\n"
		resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, hdr+"a,1,x,SUCCESS\n")
		resultstest.WriteNode(t, job, 1, jobdir.OutcomeSuccess, hdr+"a,2,x,SUCCESS\n")
		col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "800", Attempt: -1})
		if err != nil {
			t.Fatal(err)
		}
		if failed := col.Summary.Err() != nil; failed == selected {
			t.Fatalf("selected %v: summary error %v", selected, col.Summary.Err())
		}
	}
}

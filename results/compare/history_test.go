package compare

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
)

// historyJob writes a collected job of manifest name started at day d with perf.csv.
func historyJob(t testing.TB, l jobdir.Layout, id, name string, day int, perf string) jobdir.Dir {
	t.Helper()
	j := jobdirtest.NewJob(t, id, []string{"h0"}, jobdir.JobManifest{Name: name})
	j.StartedAt = time.Date(2026, 11, day, 0, 0, 0, 0, time.UTC)
	d := jobdirtest.Job(t, l.Job(id, 0), j)
	jobdirtest.File(t, d.Output(jobdir.PerfFile), []byte("model,metric,performance,status,git_commit\ntrain,samples_per_second,"+perf+",SUCCESS,abc\n"))
	return d
}

func TestHistory(t *testing.T) {
	l := jobdir.Layout{Shared: t.TempDir()}
	historyJob(t, l, "10", "m", 3, "90")
	historyJob(t, l, "8", "m", 1, "100")
	historyJob(t, l, "9", "m", 2, "120")
	historyJob(t, l, "50", "other", 2, "7")
	if err := l.SetReference(jobdir.Reference{Manifest: "m", Job: "8"}); err != nil {
		t.Fatal(err)
	}
	rows, err := History(l, HistoryOptions{Manifest: "m", Threshold: 5})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Job+":"+r.Performance+":"+r.Verdict)
	}
	if strings.Join(got, " ") != "8:100:no change 9:120:improved 10:90:regressed" {
		t.Errorf("rows %v", got)
	}
	idx := filepath.Join(l.Jobs(), ".history", "index.json")
	if _, err := os.Stat(idx); err != nil {
		t.Fatalf("no index: %v", err)
	}
	// A job collected again (its perf.csv changed: its size, and its time, set here rather
	// than left to the clock's granularity) is read again; a removed job goes.
	perf := l.Job("10", 0).Output(jobdir.PerfFile)
	was, err := os.Stat(perf)
	if err != nil {
		t.Fatal(err)
	}
	jobdirtest.File(t, perf, []byte("model,metric,performance,status\ntrain,samples_per_second,101,SUCCESS\n"))
	if err := os.Chtimes(perf, was.ModTime().Add(time.Second), was.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(l.Job("9", 0).Path)
	rows, _ = History(l, HistoryOptions{Manifest: "m", Last: 1, Threshold: 5})
	if len(rows) != 1 || rows[0].Job != "10" || rows[0].Performance != "101" || rows[0].Verdict != "no change" {
		t.Errorf("after a recollect: %+v", rows)
	}
	// A damaged index (a writer killed mid-way, a foreign file) is rebuilt, never believed.
	for _, junk := range []string{"{\"version\":1,\"jobs\":{\"10\":{\"size\":", "[]", `{"version":99,"jobs":{}}`} {
		os.WriteFile(idx, []byte(junk), 0o644)
		rows, err := History(l, HistoryOptions{Manifest: "m"})
		if err != nil || len(rows) != 2 {
			t.Errorf("index %q: %v %+v", junk, err, rows)
		}
	}
}

// Several writers at once (login nodes on NFS) each get the whole answer, and the index
// left is whole.
func TestHistoryConcurrentWriters(t *testing.T) {
	l := jobdir.Layout{Shared: t.TempDir()}
	for i := range 40 {
		historyJob(t, l, "j"+string(rune('a'+i%26))+string(rune('a'+i/26)), "m", 1+i%28, "100")
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 8 {
		wg.Go(func() {
			rows, err := History(l, HistoryOptions{})
			if err != nil || len(rows) != 40 {
				errs <- "a reader saw " + err.Error()
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	idx := readHistoryIndex(l)
	if len(idx.Jobs) != 40 {
		t.Errorf("the index holds %d jobs", len(idx.Jobs))
	}
}

func TestOpenMetrics(t *testing.T) {
	at := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	rows := []HistoryRow{
		{Manifest: "m", Model: "train", Metric: "tps", Performance: "100", Started: at.Add(-time.Hour), Trials: "5"},
		{Manifest: "m", Model: "train", Metric: "tps", Performance: "90", Started: at, Trials: "5", Verdict: VerdictRegressed, Variant: `b="x"`},
		{Manifest: "m", Model: "train", Metric: "tps", Performance: "95", Started: at, Trials: "5"},
		{Manifest: "m", Model: "n/a", Metric: "x", Performance: "N/A", Started: at},
	}
	var b bytes.Buffer
	if err := WriteOpenMetrics(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# TYPE benchctl_performance gauge\n",
		`benchctl_performance{manifest="m",model="train",metric="tps",key="",variant=""} 95` + "\n",
		`benchctl_performance{manifest="m",model="train",metric="tps",key="",variant="b=\"x\""} 90` + "\n",
		`benchctl_job_start_time_seconds{manifest="m",model="train",metric="tps",key="",variant=""} 1795651200` + "\n",
		`benchctl_regressed{manifest="m",model="train",metric="tps",key="",variant="b=\"x\""} 1` + "\n",
		"# EOF\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "n/a") {
		t.Errorf("a value that is not a number is a series:\n%s", out)
	}
}

// Several processes (login nodes sharing the folder) writing the index at once, one of them
// killed while at it: every reader gets the whole answer, and the index left is whole or is
// rebuilt.
func TestHistoryConcurrentProcesses(t *testing.T) {
	if dir := os.Getenv("BENCHCTL_HISTORY_CHILD"); dir != "" {
		rows, err := History(jobdir.Layout{Shared: dir}, HistoryOptions{})
		if err != nil || len(rows) != 60 {
			fmt.Fprintf(os.Stderr, "child: %d rows, %v\n", len(rows), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	shared := t.TempDir()
	l := jobdir.Layout{Shared: shared}
	for i := range 60 {
		historyJob(t, l, fmt.Sprintf("p%03d", i), "m", 1+i%28, "100")
	}
	var cmds []*exec.Cmd
	for i := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryConcurrentProcesses$")
		cmd.Env = append(os.Environ(), "BENCHCTL_HISTORY_CHILD="+shared)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			go func() { time.Sleep(2 * time.Millisecond); cmd.Process.Kill() }() // killed mid-way
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil && i != 0 {
			t.Errorf("child %d: %v", i, err)
		}
	}
	rows, err := History(l, HistoryOptions{})
	if err != nil || len(rows) != 60 {
		t.Errorf("after the writers: %d rows, %v", len(rows), err)
	}
	if idx := readHistoryIndex(l); len(idx.Jobs) != 60 {
		t.Errorf("the index holds %d jobs", len(idx.Jobs))
	}
	left, _ := filepath.Glob(filepath.Join(l.Jobs(), ".history", "*"))
	for _, f := range left {
		if filepath.Base(f) != "index.json" && !strings.HasPrefix(filepath.Base(f), ".") {
			t.Logf("left in the index folder: %s", f)
		}
	}
}

// A row whose test_duration is not a number (a CSV's "N/A") gets no time attribute: JUnit
// readers take it as seconds.
func TestJUnitTimeIsANumberOrNothing(t *testing.T) {
	perf := table("model,metric,performance,status,test_duration", "a,x,1,SUCCESS,N/A", "b,x,2,SUCCESS,12.5")
	var b bytes.Buffer
	if err := WriteJUnit(&b, &results.Summary{Job: "1"}, perf, nil, ""); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, `time="N/A"`) || !strings.Contains(out, `name="b x" time="12.5"`) {
		t.Errorf("%s", out)
	}
}

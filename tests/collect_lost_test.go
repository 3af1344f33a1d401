package tests

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/tests/testbed"
)

// A job whose rank 1 was killed mid-benchmark (its status still says running) is reported
// by collect as lost, with its last record, once squeue and scontrol have forgotten the job
// and only sacct knows that it ended; --partial does not make it a SUCCESS. With accounting
// off, collect says so once and the node counts as running.
func TestCollectLostNodeViaSacct(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	started := time.Now().UTC().Truncate(time.Second)

	// A real job on every node that ends at once; its job folder is what benchctl run leaves
	// when rank 1 is SIGKILLed in the middle of its benchmark.
	sb := exec.Command("sbatch", "--parsable", "--wait", "-N", itoa(len(tb.Nodes)), "--ntasks-per-node=1", "-p", tb.Partition,
		"-o", "/dev/null", "-J", "e2e-lost", "--wrap", "true")
	sb.Env = tb.Env()
	out, err := sb.Output()
	id := strings.TrimSpace(strings.Split(string(out), ";")[0])
	if err != nil || id == "" {
		t.Fatalf("sbatch: %v %s", err, out)
	}
	benchAt := writeJobWithLostRank(t, shared, id, tb.Nodes, started)

	waitForgotten(t, tb, id, 2*time.Minute)
	if st := sacctState(t, tb.Env(), id); st != "COMPLETED" {
		t.Fatalf("sacct says %q about job %s, want COMPLETED (is accounting up? tests/testbed/up.sh starts it)", st, id)
	}

	want := fmt.Sprintf("lost (last status %s, benchmark dummy started): status.json still says running, but Slurm says the job is COMPLETED (sacct); the node stopped without recording its end",
		benchAt.Format(time.RFC3339))
	lostNode := "1-" + tb.Nodes[1]
	for _, partial := range []bool{false, true} {
		args := []string{"collect", id, "--shared-dir", shared}
		if partial {
			args = append(args, "--partial")
		}
		code, stdout, stderr := benchctlRun(t, tb.Env(), args...)
		if code != 3 || !strings.Contains(stdout, "FAILURE") || strings.Contains(stdout, "SUCCESS") ||
			!strings.Contains(stderr, lostNode+" (lost (last status "+benchAt.Format(time.RFC3339)) {
			t.Fatalf("partial=%v: exit %d\nstdout:\n%s\nstderr:\n%s", partial, code, stdout, stderr)
		}
		var s results.Summary
		data, err := os.ReadFile(jobdir.Layout{Shared: shared}.Job(id, 0).Output(jobdir.SummaryFile))
		if err != nil || json.Unmarshal(data, &s) != nil {
			t.Fatalf("summary.json: %v", err)
		}
		if s.Status != results.StatusFailure || s.Nodes.Running != 0 || len(s.NodeFailures) != 1 ||
			s.NodeFailures[0].Outcome != "lost" || s.NodeFailures[0].Reason != want || s.NodeFailures[0].Label() != lostNode {
			t.Fatalf("partial=%v: status %s nodes %+v failures %+v\nwant reason %q", partial, s.Status, s.Nodes, s.NodeFailures, want)
		}
		if b := s.Benchmarks[0]; b.Status != results.StatusFailure || len(b.Failed) != 1 || b.Failed[0].Reason != want {
			t.Fatalf("partial=%v: benchmark %+v", partial, b)
		}
	}

	// The same cluster seen through a slurm.conf without accounting: sacct says it is
	// disabled, collect says so once and cannot call the node lost.
	noAcct := slurmConfWithoutAccounting(t, tb.SlurmConf)
	env := append(tb.Env(), "SLURM_CONF="+noAcct)
	code, stdout, stderr := benchctlRun(t, env, "collect", id, "--shared-dir", shared)
	note := "Slurm accounting is off: cannot tell whether job " + id + " ended; nodes still saying running are reported as running"
	if code != 1 || strings.Count(stderr, note) != 1 || !strings.Contains(stderr, `(sacct: Slurm accounting storage is disabled)`) ||
		!strings.Contains(stderr, "is still running: 1 node has not finished ("+lostNode+")") {
		t.Fatalf("without accounting: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = benchctlRun(t, env, "collect", id, "--shared-dir", shared, "--partial")
	if code != 3 || strings.Count(stderr, note) != 1 || strings.Contains(stdout, "SUCCESS") || !strings.Contains(stderr, "has not finished") {
		t.Fatalf("without accounting, --partial: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// writeJobWithLostRank writes jobs/<id>: job.json for one benchmark "dummy" on nodes, every
// rank done with a result except rank 1, whose status says its benchmark is running (the
// file a SIGKILLed benchctl run leaves). It returns when rank 1's benchmark started.
func writeJobWithLostRank(t *testing.T, shared, id string, nodes []string, started time.Time) time.Time {
	t.Helper()
	d := jobdir.Layout{Shared: shared}.Job(id, 0)
	job := jobdir.Job{Job: id, World: len(nodes), Nodes: nodes, StartedAt: started, Source: jobdir.SourceSlurm}
	if err := job.SetManifest(jobdir.JobManifest{Name: "lost", Benchmarks: []jobdir.JobBenchmark{{Name: "dummy", Command: []string{"/dummy"}, Results: "dummy.csv"}},
		GPU: jobdir.ManifestGPU{Vendor: "none"}}); err != nil {
		t.Fatal(err)
	}
	jobdirtest.Job(t, d, &job)
	imageAt, runAt, benchAt, done := started.Add(time.Second), started.Add(2*time.Second), started.Add(3*time.Second), started.Add(5*time.Second)
	for rank, host := range nodes {
		nd := d.Node(rank, host)
		jobdirtest.Mkdir(t, nd.Results("dummy"))
		st := &jobdir.Status{Version: jobdir.StatusVersion, Job: id, Rank: rank, Host: host, World: len(nodes), Outcome: jobdir.OutcomeSuccess,
			StartedAt: started, FinishedAt: &done,
			Phases: []jobdir.PhaseStatus{
				{Name: jobdir.PhaseContext, StartedAt: started, FinishedAt: &imageAt, Outcome: jobdir.PhaseOK},
				{Name: jobdir.PhaseImage, StartedAt: imageAt, FinishedAt: &runAt, Outcome: jobdir.PhaseOK},
				{Name: jobdir.PhaseRun, StartedAt: runAt, FinishedAt: &done, Outcome: jobdir.PhaseOK}},
			Benchmarks: []jobdir.BenchmarkStatus{{Name: "dummy", Outcome: jobdir.OutcomeSuccess, StartedAt: benchAt, FinishedAt: &done,
				DurationSeconds: 2, Log: "dummy.log"}}}
		if rank == 1 {
			st.Outcome, st.FinishedAt = jobdir.OutcomeRunning, nil
			st.Phases[2].FinishedAt, st.Phases[2].Outcome = nil, jobdir.OutcomeRunning
			st.Benchmarks[0] = jobdir.BenchmarkStatus{Name: "dummy", Outcome: jobdir.OutcomeRunning, StartedAt: benchAt, Log: "dummy.log"}
		} else {
			csv := fmt.Sprintf("model,performance,metric,status\ndummy_0,%d,samples_per_second,SUCCESS\n", 100+rank)
			jobdirtest.Result(t, nd, "dummy", "dummy.csv", []byte(csv))
		}
		jobdirtest.Status(t, nd, st)
	}
	return benchAt
}

// waitForgotten waits until squeue and scontrol no longer know the job (the testbed's
// MinJobAge is 10 s; slurmctld purges within a few seconds more).
func waitForgotten(t *testing.T, tb *testbed.Testbed, id string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		sc := exec.Command("scontrol", "show", "job", "-o", id)
		sc.Env = tb.Env()
		var stderr strings.Builder
		sc.Stderr = &stderr
		out, err := sc.Output()
		if err != nil && strings.Contains(strings.ToLower(stderr.String()), "invalid job id") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("scontrol still knows job %s after %s (MinJobAge of the testbed's slurm.conf?): %v %s %s", id, within, err, out, stderr.String())
		}
		time.Sleep(time.Second)
	}
}

func sacctState(t *testing.T, env []string, id string) string {
	t.Helper()
	cmd := exec.Command("sacct", "-j", id, "-n", "-X", "-P", "-o", "State")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sacct: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// slurmConfWithoutAccounting copies a slurm.conf without its Accounting* lines.
func slurmConfWithoutAccounting(t *testing.T, conf string) string {
	t.Helper()
	f, err := os.Open(conf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if !strings.HasPrefix(strings.TrimSpace(sc.Text()), "Accounting") {
			b.WriteString(sc.Text() + "\n")
		}
	}
	p := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// benchctlRun runs the testbed's benchctl with env and returns its exit code and output.
func benchctlRun(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	tb := testbed.Require(t)
	cmd := exec.Command(tb.Benchctl(t), args...)
	cmd.Env = append(env, "BENCHCTL_SHARED_DIR=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

package tests

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/tests/testbed"
)

func submit(t *testing.T, tb *testbed.Testbed, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(tb.Benchctl(t), append([]string{"submit"}, args...)...)
	cmd.Env = append(tb.Env(), "BENCHCTL_SHARED_DIR=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// `benchctl submit --wait` runs the allreduce example over every node and exits 0; a
// benchmark failing on one node makes it exit 3.
func TestSubmitWait(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	n := len(tb.Nodes)
	out, errs, code := submit(t, tb, "--manifest", repoPath(t, "models/allreduce/benchmark.yaml"), "--nodes", itoa(n),
		"--partition", tb.Partition, "--shared-dir", shared, "--wait", "--collect")
	if code != 0 || strings.Count(out, "success") != n || !strings.Contains(out, "allreduce_busbw") || !strings.Contains(out, "SUCCESS") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "nodes reported") {
		t.Errorf("no progress lines on stderr:\n%s", errs)
	}
	id := strings.TrimSpace(strings.Split(out, "\n")[0])
	if left := submitFiles(t, shared); len(left) != 0 {
		t.Errorf("the ended job's submission files (its secret) were left in jobs/.submit: %v", left)
	}
	logs, _ := os.ReadFile(shared + "/jobs/" + id + "/sbatch.err")
	if len(logs) == 0 {
		t.Error("the job's output did not land in its job folder")
	}

	// Without --wait the files stay while the job runs: the secret 0600 and not in the
	// script; collect of the ended job removes them.
	mf := dummyManifest(t, "submitfails", []string{"/dummy", "--rows", "1", "--fail-rank", "1", "--exit-code", "3"})
	out, errs, code = submit(t, tb, "--manifest", mf, "--nodes", itoa(n), "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errs)
	}
	id = strings.TrimSpace(out)
	files := submitFiles(t, shared)
	if len(files) != 3 {
		t.Fatalf("submission files %v, want the script, the secret and %s.job", files, id)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".sh") {
			continue
		}
		body, _ := os.ReadFile(shared + "/jobs/.submit/" + f)
		secretFile := shared + "/jobs/.submit/" + strings.TrimSuffix(f, ".sh") + ".secret"
		secret, _ := os.ReadFile(secretFile)
		if len(strings.TrimSpace(string(secret))) < 32 || strings.Contains(string(body), strings.TrimSpace(string(secret))) {
			t.Error("the job secret is missing or written into the script")
		}
		if st, err := os.Stat(secretFile); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("secret file mode: %v %v", st.Mode(), err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
		if code == 3 && strings.Contains(cout, "FAILURE") {
			break
		}
		if (code != 1 && code != 4) || time.Now().After(deadline) { // 1: still running; 4: no folder yet
			t.Fatalf("collect of the failing job: exit %d\n%s\n%s", code, cout, cerr)
		}
		time.Sleep(2 * time.Second)
	}
	if left := submitFiles(t, shared); len(left) != 0 {
		t.Errorf("collect left the ended job's submission files: %v", left)
	}
}

// submitFiles lists the submission files in jobs/.submit (not sbatch's own output).
func submitFiles(t *testing.T, shared string) []string {
	t.Helper()
	ents, _ := os.ReadDir(shared + "/jobs/.submit")
	var names []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".sh") || strings.HasSuffix(n, ".secret") || strings.HasSuffix(n, ".job") {
			names = append(names, n)
		}
	}
	return names
}

func itoa(i int) string { return strconv.Itoa(i) }

// benchctl cancel of a Slurm job runs scancel: its nodes' benchctl end their benchmarks
// on the SIGTERM and say so, and Slurm records the job CANCELLED; a job id Slurm never had
// is bad input, exit 4.
func TestCancelSlurmJob(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := dummyManifest(t, "cancelme", []string{"/dummy", "--rows", "1", "--sleep", "300s"})
	out, errs, code := submit(t, tb, "--manifest", mf, "--nodes", "2", "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errs)
	}
	id := strings.TrimSpace(out)
	running := func() int {
		n := 0
		statuses, _ := filepath.Glob(filepath.Join(shared, "jobs", id, "nodes", "*", "status.json"))
		for _, p := range statuses {
			b, _ := os.ReadFile(p)
			var st jobdir.Status
			if json.Unmarshal(b, &st) == nil && len(st.Benchmarks) > 0 && st.Outcome == "running" {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	for running() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("job %s's 2 nodes never ran their benchmark", id)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if code, out, errs := benchctlRun(t, tb.Env(), "cancel", id); code != 0 {
		t.Fatalf("cancel: exit %d\n%s\n%s", code, out, errs)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		st := sacctState(t, tb.Env(), id)
		if strings.HasPrefix(st, "CANCELLED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Slurm says %q of job %s 2 minutes after cancel", st, id)
		}
		time.Sleep(time.Second)
	}
	// Each node's last word comes as its benchctl ends, a moment after Slurm's.
	deadline = time.Now().Add(time.Minute)
	for {
		cancelled := 0
		statuses, _ := filepath.Glob(filepath.Join(shared, "jobs", id, "nodes", "*", "status.json"))
		for _, p := range statuses {
			b, _ := os.ReadFile(p)
			var st jobdir.Status
			if json.Unmarshal(b, &st) == nil && st.Outcome == "cancelled" && st.FinishedAt != nil {
				cancelled++
			}
		}
		if cancelled == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 nodes say cancelled a minute after Slurm did: %v", cancelled, statuses)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if code, _, errs := benchctlRun(t, tb.Env(), "cancel", id); code != 0 {
		t.Errorf("cancel of a cancelled job: exit %d\n%s", code, errs)
	}
	if code, _, errs := benchctlRun(t, tb.Env(), "cancel", "999999"); code != 4 || !strings.Contains(errs, "Slurm has no job 999999") {
		t.Errorf("cancel of a job Slurm never had: exit %d\n%s", code, errs)
	}
}

package tests

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

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
	script, _ := os.ReadDir(shared + "/jobs/.submit")
	for _, f := range script {
		if strings.HasSuffix(f.Name(), ".sh") {
			body, _ := os.ReadFile(shared + "/jobs/.submit/" + f.Name())
			secretFile := strings.TrimSuffix(f.Name(), ".sh") + ".secret"
			secret, _ := os.ReadFile(shared + "/jobs/.submit/" + secretFile)
			if len(strings.TrimSpace(string(secret))) < 32 || strings.Contains(string(body), strings.TrimSpace(string(secret))) {
				t.Error("the job secret is missing or written into the script")
			}
			if st, err := os.Stat(shared + "/jobs/.submit/" + secretFile); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("secret file mode: %v %v", st.Mode(), err)
			}
		}
	}
	logs, _ := os.ReadFile(shared + "/jobs/" + id + "/sbatch.err")
	if len(logs) == 0 {
		t.Error("the job's output did not land in its job folder")
	}

	mf := dummyManifest(t, "submitfails", []string{"/dummy", "--rows", "1", "--fail-rank", "1", "--exit-code", "3"})
	out, errs, code = submit(t, tb, "--manifest", mf, "--nodes", itoa(n), "--shared-dir", shared, "--wait", "--collect")
	if code != 3 || !strings.Contains(out, "failure") || !strings.Contains(out, "FAILURE") {
		t.Fatalf("failing job: exit %d\n%s\n%s", code, out, errs)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

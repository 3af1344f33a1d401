package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// madengine judges a run by its log too: a benchmark that prints a Python error and exits
// 0 is a FAILURE, quoting the line; with logScan: false the same benchmark succeeds.
func TestLogErrorScanFailsAnExitZero(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	say := "RuntimeError: HIP error: an illegal memory access was encountered"
	body := fmt.Sprintf(`name: logscan
image: {dockerfile: %s}
gpu: {vendor: none}
benchmarks:
  - {name: swallowed, command: ["/dummy", "--rows", "1", "--say", %q], results: dummy.csv, onFailure: continue}
  - {name: optout, command: ["/dummy", "--rows", "1", "--say", %q], results: dummy.csv, logScan: false}
`, repoPath(t, "models/dummy/Dockerfile"), say, say)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(mf, []byte(body), 0o644)
	id, out, err := runJob(t, tb, mf, shared, true)
	if err == nil {
		t.Fatalf("the job succeeded:\n%s", out)
	}
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if len(s.Benchmarks) != 2 {
			t.Fatalf("%s: %+v", d, s.Benchmarks)
		}
		sw, opt := s.Benchmarks[0], s.Benchmarks[1]
		if sw.Outcome != runner.OutcomeFailure || sw.ExitCode != 0 || !strings.Contains(sw.Error, `contains the error pattern "RuntimeError:": `+say) {
			t.Errorf("%s swallowed: %s (exit %d): %s", d, sw.Outcome, sw.ExitCode, sw.Error)
		}
		if opt.Outcome != runner.OutcomeSuccess {
			t.Errorf("%s optout: %s: %s", d, opt.Outcome, opt.Error)
		}
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared, "-o", "csv")
	if code != 3 || !strings.Contains(cout, "RuntimeError") || !strings.Contains(cout, "FAILURE") {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	// job.json records the image's provenance for perf.csv: its base and the commit of
	// the repository its build context is in (this checkout).
	j, err := jobdir.ReadJob(jobdir.Layout{Shared: shared}.Job(id, 0).JobFile())
	if err != nil {
		t.Fatal(err)
	}
	if j.Image.Base != "scratch" {
		t.Errorf("base %q, want scratch", j.Image.Base)
	}
	if head, err := exec.Command("git", "-C", repoPath(t, "."), "rev-parse", "HEAD").Output(); err == nil {
		if want := strings.TrimSpace(string(head)); j.Image.GitCommit != want || !strings.Contains(cout, want) {
			t.Errorf("git commit %q, want %q (and in perf.csv)", j.Image.GitCommit, want)
		}
	}
}

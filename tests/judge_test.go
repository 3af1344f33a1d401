package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/tests/testbed"
)

// judgeScript: the value of a trial is 1000 (900 for variant a in the new job: 10 % slower)
// plus a known jitter from the trial number; in the new job variant b's jitter is five times
// larger (only noisier).
const judgeScript = `j=$(( (BENCHCTL_TRIAL * 37) % 7 - 3 ))
v=$((1000 + j))
if [ "$MODE" = new ] && [ "$BENCHCTL_PARAM_V" = a ]; then v=$((900 + j)); fi
if [ "$MODE" = new ] && [ "$BENCHCTL_PARAM_V" = b ]; then v=$((1000 + 5 * j)); fi
printf 'model,performance,metric\ntrain,%s,samples_per_second\n' "$v" > "$BENCHCTL_OUTPUT_DIR/r.csv"
`

// Two experiments of one manifest: the second makes variant a 10 % slower on purpose and
// variant b only noisier. Against the first as the reference, compare says regressed for a
// and no change (or inconclusive) for b; collect --check exits 3 and its JUnit file fails a
// only.
func TestJudgeTwoExperiments(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	manifest := func(mode string) string {
		body := fmt.Sprintf(`name: judged
image: {ref: %q, pull: never}
gpu: {vendor: none}
env: {MODE: %s}
benchmarks:
  - {name: train, command: ["sh", "-c", %q], results: r.csv}
experiment:
  matrix: {v: [a, b]}
  repeat: 5
metrics:
  samples_per_second: {better: higher, tolerance: 5%%}
`, tb.ShellImage, mode, judgeScript)
		p := filepath.Join(t.TempDir(), "judged.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jobOf := func(mode string) string {
		out, errs, code := submit(t, tb, "--manifest", manifest(mode), "--nodes", "1", "--partition", tb.Partition, "--shared-dir", shared, "--wait", "--collect")
		if code != 0 {
			t.Fatalf("submit (%s): exit %d\n%s\n%s", mode, code, out, errs)
		}
		return strings.TrimSpace(strings.Split(out, "\n")[0])
	}
	bench := func(args ...string) (string, string, int) {
		cmd := exec.Command(tb.Benchctl(t), append(args, "--shared-dir", shared)...)
		cmd.Env = tb.Env()
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return out.String(), errb.String(), code
	}
	base := jobOf("base")
	if out, errs, code := bench("reference", "set", base); code != 0 {
		t.Fatalf("reference set: exit %d\n%s%s", code, out, errs)
	}
	cur := jobOf("new")

	out, errs, code := bench("compare", cur, "-o", "csv")
	if code != 3 {
		t.Fatalf("compare: exit %d, want 3\n%s%s", code, out, errs)
	}
	rows := readPerfCSV(t, out)
	verdicts := map[string]string{}
	for _, r := range rows {
		verdicts[r["key"]] = r["verdict"] + " " + r["method"]
	}
	if v := verdicts["benchctl_variant=v=a"]; v != "regressed rank test" {
		t.Errorf("variant a (10%% slower): %q\n%s", v, out)
	}
	if v := verdicts["benchctl_variant=v=b"]; v != "no change rank test" && v != "inconclusive rank test" {
		t.Errorf("variant b (only noisier): %q\n%s", v, out)
	}

	junit := filepath.Join(t.TempDir(), "benchctl.xml")
	out, errs, code = bench("collect", cur, "--check", "--junit", junit)
	if code != 3 || !strings.Contains(errs, "regressed") {
		t.Fatalf("collect --check: exit %d, want 3\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	x := string(data)
	if !strings.Contains(x, `tests="2" failures="1"`) || !strings.Contains(x, `name="train samples_per_second [v=a]"`) ||
		strings.Count(x, "<failure") != 1 || !strings.Contains(x, `<failure message="regressed against job `+base) {
		t.Errorf("JUnit:\n%s", x)
	}
}

// readPerfCSV reads CSV text as maps by column.
func readPerfCSV(t *testing.T, text string) []map[string]string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.csv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return readPerf(t, p)
}

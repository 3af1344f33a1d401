package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctor -o json is one document naming its host: indented on one node, one line per node
// when several tasks of an srun step print at once (their lines interleave); -q leaves
// stdout as it is and stderr without log lines.
func TestDoctorJSONNamesItsHost(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BENCHCTL_SHARED_DIR", filepath.Join(dir, "shared"))
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no.sock"))
	for _, v := range []string{"SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_JOB_ID", "SLURM_PROCID"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	host, _ := os.Hostname()
	code, out, _ := run(t, "doctor", "-o", "json")
	var doc struct {
		Host   string            `json:"host"`
		OK     bool              `json:"ok"`
		Checks []json.RawMessage `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Host != host || doc.OK || len(doc.Checks) == 0 || code != 1 {
		t.Fatalf("exit %d, %v: %+v\n%s", code, err, doc, out)
	}
	if !strings.HasPrefix(out, "{\n  \"host\": ") {
		t.Errorf("one node's document is indented:\n%s", out)
	}
	t.Setenv("SLURM_STEP_NUM_TASKS", "4")
	code, out, _ = run(t, "doctor", "-o", "json")
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 1 || code != 1 || json.Unmarshal([]byte(lines[0]), &doc) != nil || doc.Host != host {
		t.Errorf("under srun: exit %d, %d lines:\n%s", code, len(lines), out)
	}
	t.Setenv("SLURM_STEP_NUM_TASKS", "")
	code, qout, qerrs := run(t, "doctor", "-q")
	if code != 1 || !strings.Contains(qout, "FAIL") || qerrs != "benchctl: error: 1 checks failed\n" && !strings.HasSuffix(qerrs, "checks failed\n") || strings.Count(qerrs, "\n") != 1 {
		t.Errorf("-q: exit %d, stderr:\n%s", code, qerrs)
	}
}

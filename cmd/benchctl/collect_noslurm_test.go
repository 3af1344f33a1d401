package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// slurmDown puts squeue, scontrol and sacct on PATH as on a login node whose slurmctld and
// slurmdbd do not answer: each writes several lines on stderr, exits 1, and leaves a mark.
func slurmDown(t *testing.T) (marks string) {
	t.Helper()
	dir := t.TempDir()
	marks = filepath.Join(dir, "asked")
	ctld := "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
	for name, stderr := range map[string]string{
		"squeue":   ctld,
		"scontrol": ctld,
		"sacct": "sacct: error: _open_persist_conn: failed to open persistent connection to host:slurmdbd:6819: Connection timed out\n" +
			"sacct: error: Sending PersistInit msg: Connection timed out\nsacct: error: Problem talking to the database: Connection timed out",
	} {
		body := "#!/bin/sh\necho " + name + " >> " + marks + "\nprintf '%s\\n' '" + stderr + "' >&2\nexit 1\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	return marks
}

// collect on a job folder where Slurm does not answer says so in one readable line (no
// escaped newlines) and goes on from the folder; --no-slurm asks nothing and says nothing.
func TestCollectWhenSlurmDoesNotAnswer(t *testing.T) {
	shared := fixtures(t)
	marks := slurmDown(t)
	code, out, errs := runResults(t, "collect", "100", "--shared-dir", shared)
	if code != 0 || !strings.Contains(out, "SUCCESS") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var slurmLines []string
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		if strings.Contains(l, "level=WARN") {
			slurmLines = append(slurmLines, l)
		}
	}
	want := `level=WARN msg="Slurm did not answer about job 100 (squeue, scontrol: Unable to contact slurm controller (connect failure); sacct: Problem talking to the database: Connection timed out): collect went on from the job folder; --no-slurm does not ask"`
	if len(slurmLines) != 1 || !strings.HasSuffix(slurmLines[0], want) || strings.Contains(errs, `\n`) {
		t.Errorf("want one line ending in\n%s\ngot:\n%s", want, errs)
	}
	os.Remove(marks)
	code, out, errs = runResults(t, "collect", "100", "--shared-dir", shared, "--no-slurm")
	if code != 0 || !strings.Contains(out, "SUCCESS") || strings.Contains(errs, "WARN") {
		t.Errorf("--no-slurm: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(marks); err == nil {
		b, _ := os.ReadFile(marks)
		t.Errorf("--no-slurm asked %s", b)
	}
}

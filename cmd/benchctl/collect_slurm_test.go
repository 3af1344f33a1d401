package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// fakeSlurm puts squeue, scontrol and sacct scripts on PATH: squeue and scontrol have
// forgotten every job; sacct writes sacctErr on stderr and exits 1, or prints sacctOut.
func fakeSlurm(t *testing.T, sacctOut, sacctErr string) {
	t.Helper()
	dir := t.TempDir()
	forgot := "#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n"
	sacct := "#!/bin/sh\nprintf '%s' '" + sacctOut + "'\n"
	if sacctErr != "" {
		sacct = "#!/bin/sh\nprintf '%s\\n' '" + sacctErr + "' >&2\nexit 1\n"
	}
	for name, body := range map[string]string{"squeue": forgot, "scontrol": forgot, "sacct": sacct} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

// Once squeue and scontrol have forgotten a job, collect asks sacct. Accounting that is off
// is said once, and the status files decide as before.
func TestCollectAsksSacct(t *testing.T) {
	const off = "Slurm accounting is off: cannot tell whether job 600 ended; nodes still saying running are reported as running"
	cases := []struct {
		name, sacctOut, sacctErr string
		code                     int
		stderr                   []string
		once                     string // said exactly once on stderr
		summary                  string // in summary.json
	}{
		{name: "sacct says the job ended: the running node was lost", sacctOut: "COMPLETED\n", code: exitRun,
			stderr:  []string{"1-s2 (lost (last status 2026-11-23T10:01:00Z, phase results ended): status.json still says running"},
			summary: "status.json still says running, but Slurm says the job is COMPLETED (sacct); the node stopped without recording its end"},
		{name: "sacct says it was cancelled", sacctOut: "CANCELLED by 0\n", code: exitRun,
			summary: "Slurm says the job is CANCELLED (sacct)"},
		{name: "sacct says it still runs", sacctOut: "RUNNING\n", code: exitFailure,
			stderr: []string{"job 600 (attempt 0) is still running: Slurm says RUNNING"}},
		{name: "accounting off", sacctErr: "Slurm accounting storage is disabled", code: exitFailure,
			stderr: []string{`(sacct: Slurm accounting storage is disabled)"`, "1 node has not finished (1-s2)"}, once: off},
		{name: "slurmdbd down", sacctErr: "sacct: error: Problem talking to the database: Connection refused", code: exitFailure,
			once: "Slurm accounting does not answer: cannot tell whether job 600 ended; nodes still saying running are reported as running"},
		{name: "sacct garbage", sacctOut: "<html>\n", code: exitFailure,
			stderr: []string{`Slurm did not answer about job 600 (sacct: unexpected output \"<html>\"): collect went on from the job folder; --no-slurm does not ask`, "1 node has not finished"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := fixtures(t)
			fakeSlurm(t, c.sacctOut, c.sacctErr)
			code, out, errs := runResults(t, "collect", "600", "--shared-dir", shared)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			for _, s := range c.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			if c.summary != "" {
				if data, err := os.ReadFile(jobdir.Layout{Shared: shared}.Job("600", 0).Output(jobdir.SummaryFile)); !strings.Contains(string(data), c.summary) {
					t.Errorf("summary.json lacks %q: %v\n%s", c.summary, err, data)
				}
			}
			if c.once != "" && strings.Count(errs, c.once) != 1 {
				t.Errorf("stderr says %q %d times, want once:\n%s", c.once, strings.Count(errs, c.once), errs)
			}
			if c.once == "" && strings.Contains(errs, "cannot tell whether") {
				t.Errorf("accounting note without cause:\n%s", errs)
			}
		})
	}
}

// collect removes an ended job's submission files (its secret) only when Slurm says the
// job has ended: a requeued job reads its secret again, and a Slurm that does not answer
// cannot say.
func TestCollectRemovesTheSecretOnlyWhenSlurmSaysEnded(t *testing.T) {
	for _, c := range []struct {
		name, sacctOut, sacctErr string
		kept                     bool
	}{
		{name: "sacct says completed", sacctOut: "COMPLETED\n"},
		{name: "Slurm does not answer", sacctErr: "sacct: error: Problem talking to the database: Connection refused", kept: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			shared := fixtures(t)
			l := jobdir.Layout{Shared: shared}
			os.MkdirAll(l.Submit(), 0o700)
			os.WriteFile(l.SubmitFiles("tok").Secret, []byte("s"), 0o600)
			if err := l.RecordSubmitted("tok", "100"); err != nil {
				t.Fatal(err)
			}
			fakeSlurm(t, c.sacctOut, c.sacctErr)
			runResults(t, "collect", "100", "--shared-dir", shared)
			if _, err := os.Stat(l.SubmitFiles("tok").Secret); (err == nil) != c.kept {
				t.Fatalf("secret kept = %v, want %v", err == nil, c.kept)
			}
		})
	}
}

package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stable is a command's stdout without what differs from one run to the next: a dry run's
// local job id (its second) and the ports derived from it.
func stable(out string) string {
	return jobPort.ReplaceAllString(localJob.ReplaceAllString(out, "JOB"), "${1}PORT")
}

var (
	localJob = regexp.MustCompile(`local-\d{8}-\d{6}-\d+`)
	jobPort  = regexp.MustCompile(`([:= ])[2-5]\d{4}\b`)
)

var logLine = regexp.MustCompile(`(?m)^(time=\S+ level=(INFO|WARN|DEBUG) |(INFO|WARN|DEBUG) +\S).*\n`)

// -q/--quiet (submit: --quiet, its -q is sbatch's --qos) is errors only: each command that
// logs without it prints, with it, exactly its stderr less the log lines, and the same
// stdout. In a pipe (the log lines) and a terminal alike.
func TestQuiet(t *testing.T) {
	old := slog.Default() // -q leaves the level at error: later tests' progress printers need it back
	t.Cleanup(func() { slog.SetDefault(old) })
	shared := fixtures(t)
	catalog, err := filepath.Abs("../../tests/fixtures/mad/models.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // the default shared directory, which is logged
	t.Setenv("BENCHCTL_SHARED_DIR", "")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no.sock"))
	if err := os.WriteFile("ok.yaml", []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("df.yaml", []byte("name: x\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("warn.yaml", []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nsecrets: [QUIETTEST_UNSET_TOKEN]\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("Dockerfile", []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := "-q"
	for _, c := range []struct {
		args  []string
		quiet string // the flag
	}{
		{[]string{"build", "-m", "df.yaml"}, q},
		{[]string{"run", "--dry-run", "-m", "ok.yaml"}, q},
		{[]string{"submit", "--dry-run", "-m", "ok.yaml"}, "--quiet"},
		{[]string{"collect", "1"}, q},
		{[]string{"collect", "500", "--shared-dir", shared, "-o", "csv"}, q},
		{[]string{"compare", "1"}, q},
		{[]string{"cache", "ls"}, q},
		{[]string{"cache", "prune", "--dry-run"}, "--quiet"},
		{[]string{"cleanup", "--job", "1"}, q},
		{[]string{"jobs"}, q},
		{[]string{"history"}, q},
		{[]string{"reference", "show", "1"}, q},
		{[]string{"models", "list", "--catalog", catalog, "--tags", "nope"}, q},
		{[]string{"validate", "-m", "warn.yaml"}, q},
		{[]string{"init", "--dockerfile", "Dockerfile", "--file", "new.yaml"}, q},
	} {
		for _, tty := range []bool{false, true} {
			os.Remove("new.yaml") // init's
			code, out, errs := runMode(t, tty, c.args...)
			if !logLine.MatchString(strings.ReplaceAll(errs, "\r\033[K", "\n")) && !strings.Contains(errs, "no jobs in") && !strings.Contains(errs, "wrote ") {
				t.Errorf("%v: logs nothing without %s, so the test shows nothing:\n%s", c.args, c.quiet, errs)
			}
			want := "" // the final error alone, if any
			if i := strings.Index(errs, "benchctl: error: "); i >= 0 {
				want = errs[i:]
			}
			os.Remove("new.yaml")
			qcode, qout, qerrs := runMode(t, tty, append(slices.Clone(c.args), c.quiet)...)
			if qcode != code || stable(qout) != stable(out) || qerrs != want {
				t.Errorf("%v %s (tty %v): exit %d (without it %d), stdout same %v\n got %q\nwant %q", c.args, c.quiet, tty, qcode, code, qout == out, qerrs, want)
			}
		}
	}
	code, _, errs := run(t, "collect", "1", "-q", "--log-level", "debug")
	if want := "benchctl: error: -q/--quiet and --log-level debug are both given\nhint: give one of them: -q is --log-level error\n"; code != exitInvalid || errs != want {
		t.Errorf("-q with --log-level debug: exit %d\n got %q\nwant %q", code, errs, want)
	}
	if code, out, errs := run(t, "collect", "--help"); code != 0 || errs != "" || !strings.Contains(out, "  -q, --quiet ") {
		t.Errorf("collect --help has no -q: exit %d\n%s", code, out)
	}
}

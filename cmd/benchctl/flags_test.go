package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// warnings are the msg of the WARN records on a --log-format json stderr.
func warnings(t *testing.T, stderr string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON record: %q", line)
		}
		if rec.Level == "WARN" {
			out = append(out, rec.Msg)
		}
	}
	return out
}

// The old spellings work for one release as the new ones do, print the same on stdout, and
// say on stderr (in the log format) what to write instead; the new ones warn of nothing.
func TestOldSpellingsWarn(t *testing.T) {
	shared := fixtures(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.csv")
	os.WriteFile(base, []byte("model,metric,performance\na,x,100\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	mi300x := []string{"gpus", "--vendor", "amd", "--sysfs-root", gpuFixtures + "mi300x"}
	for _, c := range []struct {
		old, now []string
		warning  string
	}{
		{[]string{"collect", "100", "--shared-dir", shared, "--format", "csv"}, []string{"collect", "100", "--shared-dir", shared, "-o", "csv"},
			"--format csv is deprecated and will be removed in the next release; write -o csv instead"},
		{[]string{"compare", base, base, "--format=markdown"}, []string{"compare", base, base, "-o", "markdown"},
			"--format markdown is deprecated and will be removed in the next release; write -o markdown instead"},
		{append(mi300x, "--json"), append(mi300x, "-o", "json"),
			"--json is deprecated and will be removed in the next release; write -o json instead"},
		{[]string{"version", "--no-engine", "-o", "text"}, []string{"version", "--no-engine", "-o", "table"},
			"-o text is deprecated and will be removed in the next release; write -o table instead"},
		{[]string{"cache", "ls", "--shared-dir", dir, "--output=text"}, []string{"cache", "ls", "--shared-dir", dir},
			"-o text is deprecated and will be removed in the next release; write -o table instead"},
	} {
		code, out, errs := run(t, append(c.old, "--log-format", "json")...)
		wcode, want, werrs := run(t, append(c.now, "--log-format", "json")...)
		if code != wcode || out != want {
			t.Errorf("%v: exit %d, stdout differs from %v (exit %d):\n%s\n---\n%s", c.old, code, c.now, wcode, out, want)
		}
		if got := warnings(t, errs); len(got) != 1 || got[0] != c.warning {
			t.Errorf("%v: warnings %q, want %q", c.old, got, c.warning)
		}
		for _, w := range warnings(t, werrs) {
			if strings.Contains(w, "deprecated") {
				t.Errorf("%v: %s", c.now, w)
			}
		}
	}

	// init -o PATH is init --file PATH.
	mf := filepath.Join(dir, "old.yaml")
	code, out, errs := run(t, "init", "--dockerfile", filepath.Join(dir, "Dockerfile"), "-o", mf)
	if code != 0 || out != mf+"\n" || !strings.Contains(errs, `msg="-o `+mf+` is deprecated and will be removed in the next release; write --file `+mf+` instead"`) {
		t.Errorf("init -o: exit %d, stdout %q\n%s", code, out, errs)
	}
	if _, err := os.Stat(mf); err != nil {
		t.Error(err)
	}
}

// The old spellings are not among the flags the help lists (the text may mention them), and
// do not complete.
func TestOldSpellingsAreHidden(t *testing.T) {
	for _, args := range [][]string{{"collect", "--help"}, {"compare", "--help"}, {"gpus", "--help"}, {"init", "--help"}} {
		_, out, _ := run(t, args...)
		_, flags, _ := strings.Cut(out, "\nFlags:\n")
		for _, old := range []string{"--format", "--json", "old spelling", "-o, --output string"} {
			if strings.Contains(flags, old) {
				t.Errorf("%v lists %s:\n%s", args, old, flags)
			}
		}
	}
	if got := complete(t, "collect", "1", "--"); strings.Contains(got, "--format") {
		t.Errorf("collect completes --format:\n%s", got)
	}
}

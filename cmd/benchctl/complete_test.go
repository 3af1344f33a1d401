package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// complete is what the shell gets for a command line that ends in the word being completed,
// through cobra's hidden __complete command: one completion a line, then ":directive".
func complete(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d\n%s", args, code, errs)
	}
	return out
}

// Every flag that takes one of a few values completes them (the values the command accepts,
// those that start with what is typed); file and folder flags complete files and folders.
// Directives: 4 no file completion, 8 files with these extensions, 16 folders.
func TestFlagCompletion(t *testing.T) {
	catalog := "../../tests/fixtures/mad/models.json"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--builder", ""}, "docker\nbuildkit\n:4\n"},
		{[]string{"build", "--builder", "b"}, "buildkit\n:4\n"},
		{[]string{"build", "--engine-builder", ""}, "auto\nclassic\nbuildkit\n:4\n"},
		{[]string{"build", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"run", "--output", ""}, "table\njson\n:4\n"},
		{[]string{"submit", "-o", "j"}, "json\n:4\n"},
		{[]string{"collect", "1", "-o", ""}, "table\ncsv\njson\nmarkdown\n:4\n"},
		{[]string{"compare", "a.csv", "b.csv", "-o", "m"}, "markdown\n:4\n"},
		{[]string{"compare", "a.csv", "b.csv", "--metric-direction", ""}, "auto\nhigher\nlower\n:4\n"},
		{[]string{"validate", "-o", ""}, "yaml\njson\n:4\n"},
		{[]string{"doctor", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"version", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"cleanup", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"cleanup", "--outcome", ""}, "lost\ncancelled\n:4\n"},
		{[]string{"cache", "ls", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"cache", "verify", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"cache", "prune", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"cache", "load", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"gpus", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"gpus", "--vendor", ""}, "auto\namd\nnvidia\n:4\n"},
		{[]string{"gpus", "--amd-source", ""}, "sysfs\namd-smi\n:4\n"},
		{[]string{"models", "list", "-o", ""}, "table\njson\n:4\n"},
		{[]string{"models", "list", "--gpu-vendor", ""}, "amd\nnvidia\n:4\n"},
		{[]string{"version", "--log-format", ""}, "text\njson\n:4\n"},
		{[]string{"--log-level", ""}, "debug\ninfo\nwarn\nerror\n:4\n"},
		{[]string{"models", "list", "--catalog", catalog, "--tags", ""},
			"all\necho_infer\ninference\necho\necho_train\ntraining\nnoop_smoke\nsmoke\n:4\n"},
		{[]string{"models", "list", "--catalog", catalog, "--tags", "e"}, "echo_infer\necho\necho_train\n:4\n"},
		{[]string{"models", "list", "--catalog", catalog, "--tags", "smoke,echo_"}, "smoke,echo_infer\nsmoke,echo_train\n:4\n"},
		{[]string{"models", "list", "--tags", ""}, ":4\n"}, // no --catalog: nothing to offer
		{[]string{"models", "list", "--catalog", filepath.Join(t.TempDir(), "none.json"), "--tags", ""}, ":4\n"},
		{[]string{"build", "--manifest", ""}, "yaml\nyml\njson\n:8\n"},
		{[]string{"build", "--record", ""}, "json\n:8\n"},
		{[]string{"init", "--file", ""}, "yaml\nyml\n:8\n"},
		{[]string{"collect", "1", "--append", ""}, "csv\n:8\n"},
		{[]string{"collect", "1", "--baseline", ""}, "csv\n:8\n"},
		{[]string{"models", "list", "--catalog", ""}, "json\n:8\n"},
		{[]string{"collect", "1", "--shared-dir", ""}, ":16\n"},
		{[]string{"cache", "ls", "--shared-dir", ""}, ":16\n"},
	} {
		if got := complete(t, c.args...); got != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

// run and build --tags complete from ./models.json, as they read it (a MAD checkout).
func TestCheckoutTagsCompletion(t *testing.T) {
	data, err := os.ReadFile("../../tests/fixtures/mad/models.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "models.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--tags", ""}, "all\necho_infer\ninference\necho\necho_train\ntraining\nnoop_smoke\nsmoke\n:4\n"},
		{[]string{"build", "--tags", "tr"}, "training\n:4\n"},
		{[]string{"run", "--tags", "echo,"}, "echo,echo_infer\necho,inference\necho,echo_train\necho,training\necho,noop_smoke\necho,smoke\n:4\n"},
	} {
		if got := complete(t, c.args...); got != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
	if err := os.Remove("models.json"); err != nil {
		t.Fatal(err)
	}
	if got := complete(t, "run", "--tags", ""); got != ":4\n" {
		t.Errorf("without ./models.json: %q", got)
	}
	if strings.Contains(complete(t, "run", "-o", ""), "text") {
		t.Errorf("-o completes text, the old name of table")
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// run executes benchctl in-process and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(context.Background(), args, iostreams.New(strings.NewReader(""), &out, &errb))
	return code, out.String(), errb.String()
}

func TestExitCodesForBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "m.yaml")
	os.WriteFile(bad, []byte("name: x\ngpu: {vendor: amdd}\n"), 0o644)
	ignored := filepath.Join(dir, "ign", "m.yaml")
	os.MkdirAll(filepath.Dir(ignored), 0o755)
	os.WriteFile(ignored, []byte("name: x\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ign", "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ign", ".dockerignore"), []byte("[\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ign", "ok.yaml"), []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	// A FIFO in place of a file a user names blocked validate forever.
	fifo := filepath.Join(dir, "fifo.yaml")
	fifoDF := filepath.Join(dir, "fifodf", "Dockerfile")
	os.MkdirAll(filepath.Dir(fifoDF), 0o755)
	os.WriteFile(filepath.Join(dir, "fifodf", "m.yaml"), []byte("name: x\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Mkfifo(fifoDF, 0o644)
	syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--manifest", fifo}, fifo + ": is a FIFO (named pipe), not a manifest file"},
		{[]string{"validate", "--manifest", filepath.Join(dir, "fifodf", "m.yaml")}, fifoDF + " is not a file"},
		{[]string{"run", "--manifest", filepath.Join(dir, "ign", "ok.yaml"), "--record", filepath.Join(dir, "fifo.json"), "--dry-run"}, "is a FIFO (named pipe), not a regular file"},
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"validate", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"validate"}, "--manifest is required"},
		{[]string{"validate", "--manifest", bad}, bad + ":2: gpu.vendor:"},
		{[]string{"validate", "--manifest", filepath.Join(dir, "none.yaml")}, "no such file"},
		{[]string{"validate", "--manifest", bad, "--output", "xml"}, `invalid --output "xml"`},
		{[]string{"--log-level", "loud", "version"}, `invalid --log-level "loud"`},
		{[]string{"models", "list"}, "no --catalog given and no models.json in "},
		{[]string{"version", "extra"}, "unknown command"},
		{[]string{"validate", "--manifest", ignored}, filepath.Join(dir, "ign", ".dockerignore") + `:1: "[" is not a valid pattern`},
		{[]string{"cache", "ls", "--shared-dir", filepath.Join(dir, "nope")}, "nope does not exist or is not a folder"},
		{[]string{"cache", "ls", "--shared-dir", bad}, "does not exist or is not a folder"},
		{[]string{"cache", "verify", "--shared-dir", dir, strings.Repeat("ab", 32)}, "no cache entry with key abababab"},
		{[]string{"init", "--dockerfile", filepath.Join(dir, "ign", "Dockerfile"), "--file", filepath.Join(dir, "m.txt")}, "give a .yaml or .yml path"},
		{[]string{"init", "--dockerfile", filepath.Join(dir, "ign", "Dockerfile"), "--file", filepath.Join(dir, "no", "m.yaml")}, "the folder " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"validate", "m.yaml"}, `the manifest is given with --manifest, not as an argument (got "m.yaml")`},
		{[]string{"submit", "--dry-run", "--shared-dir", dir, "--manifest", filepath.Join(dir, "ign", "ok.yaml"), "--benchmarks", "nope"}, `"nope" is not a benchmark of x`},
		{[]string{"build", "--manifest", filepath.Join(dir, "ign", "ok.yaml"), "--shared-dir", dir, "--record", filepath.Join(dir, "no", "b.json")}, "the folder " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"run", "--manifest", bad, "--barrier-timeout", "-5s"}, "--barrier-timeout -5s is not a positive duration"},
	}
	for _, c := range cases {
		code, out, errs := run(t, c.args...)
		if code != exitInvalid {
			t.Errorf("%v: exit %d, want 4 (stderr %q)", c.args, code, errs)
		}
		if !strings.Contains(errs, c.want) {
			t.Errorf("%v: stderr %q does not contain %q", c.args, errs, c.want)
		}
		if out != "" {
			t.Errorf("%v: printed to stdout on error: %q", c.args, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Errorf("cache ls created the shared directory it was given: %v", err)
	}
}

func TestValidatePrintsRedactedManifest(t *testing.T) {
	t.Setenv("SCRATCH", "/scratch")
	t.Setenv("HF_TOKEN", "hf_supersecret")
	for _, format := range []string{"yaml", "json"} {
		code, out, errs := run(t, "validate", "--manifest", "../../manifest/testdata/good.yaml", "-o", format)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if strings.Contains(out+errs, "hf_supersecret") {
			t.Fatalf("secret printed:\n%s", out)
		}
		if !strings.Contains(out, "***") || !strings.Contains(out, "llama31-8b") {
			t.Fatalf("unexpected output:\n%s", out)
		}
		if format == "json" && !json.Valid([]byte(out)) {
			t.Fatalf("not JSON:\n%s", out)
		}
	}
}

func TestVersionHasNoSideEffects(t *testing.T) {
	code, out, _ := run(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "benchctl ") {
		t.Fatalf("--version: %d %q", code, out)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	code, out, _ = run(t, "version", "-o", "json")
	var rep commands.VersionReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.EngineError == "" || rep.Client.GoVersion == "" {
		t.Fatalf("version with no engine: %d %q", code, out)
	}
}

func TestSharedDirPrecedence(t *testing.T) {
	t.Setenv("BENCHCTL_SHARED_DIR", "/from/env")
	if got, _ := commands.SharedDir("/from/flag"); got != "/from/flag" {
		t.Errorf("flag: %s", got)
	}
	if got, _ := commands.SharedDir(""); got != "/from/env" {
		t.Errorf("env: %s", got)
	}
	t.Setenv("BENCHCTL_SHARED_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "/cache")
	if got, _ := commands.SharedDir(""); got != "/cache/benchctl" {
		t.Errorf("default: %s", got)
	}
}

// The checked-in CLI reference must match the command tree: run `make docs` after a change.
func TestCLIDocsAreCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := genDocsTo(dir); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob("../../docs/cli/*.md")
	if len(want) != len(have) {
		t.Fatalf("docs/cli has %d files, the command tree makes %d: run make docs", len(have), len(want))
	}
	for _, w := range want {
		a, _ := os.ReadFile(w)
		b, err := os.ReadFile(filepath.Join("../../docs/cli", filepath.Base(w)))
		if err != nil || string(a) != string(b) {
			t.Errorf("docs/cli/%s is stale: run make docs", filepath.Base(w))
		}
	}
}

// An engine that cannot be reached is a failure (exit 1), not a failed build (exit 2):
// whichever engine builder was asked for.
func TestBuildWithoutAnEngineIsNotABuildFailure(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY m.yaml /\n"), 0o644)
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("version: 1\nname: noengine\nimage:\n  dockerfile: Dockerfile\n  context: .\nbenchmarks:\n  - name: b\n    command: [\"/b\"]\n"), 0o644)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no-docker.sock"))
	for _, eb := range []string{"auto", "classic", "buildkit"} {
		code, _, errs := run(t, "build", "--manifest", mf, "--shared-dir", filepath.Join(dir, "shared"), "--engine-builder", eb)
		if code != 1 || !strings.Contains(errs, "not reachable") || !strings.Contains(errs, "no-docker.sock") {
			t.Errorf("--engine-builder %s: exit %d\n%s", eb, code, errs)
		}
	}
}

// A secret that is not set where run starts stops it (exit 4) before anything runs; a
// --dry-run preview only warns.
func TestRunWithAnUnsetSecret(t *testing.T) {
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nsecrets: [BCTEST_UNSET_TOKEN]\nenv: {DERIVED: \"tok=${BCTEST_UNSET_TOKEN}\"}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	os.Unsetenv("BCTEST_UNSET_TOKEN")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no-docker.sock"))
	code, _, errs := run(t, "run", "--manifest", mf, "--shared-dir", dir)
	if code != 4 || !strings.Contains(errs, "secrets: BCTEST_UNSET_TOKEN is not set") || !strings.Contains(errs, "export BCTEST_UNSET_TOKEN") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if code, _, errs := run(t, "run", "--manifest", mf, "--shared-dir", dir, "--dry-run"); code != 0 {
		t.Fatalf("dry run: exit %d\n%s", code, errs)
	}
}

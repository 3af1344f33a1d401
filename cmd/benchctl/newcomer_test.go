package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// runTTY executes benchctl in-process with stderr a terminal (tty) or a pipe.
func runTTY(t *testing.T, tty bool, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	s := iostreams.New(strings.NewReader(""), &out, &errb)
	s.SetStderrTTY(tty)
	code := Execute(context.Background(), args, s)
	return code, out.String(), errb.String()
}

// missingBinary is a build context whose Dockerfile copies a binary not built yet, as the
// examples' are before `make examples`.
func missingBinary(t *testing.T) (dir, manifest string) {
	t.Helper()
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY bin/app /app\n"), 0o644)
	manifest = filepath.Join(dir, "benchmark.yaml")
	os.WriteFile(manifest, []byte("name: app\nimage: {dockerfile: Dockerfile}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [/app]}]\n"), 0o644)
	return dir, manifest
}

// Log lines: short on a terminal (level, message, attributes; no time), full records in a
// pipe, JSON with --log-format json — here the warning of a COPY source that is missing,
// which validate and run --dry-run both give, exit 0.
func TestLogLinesOnATerminalAndInAPipe(t *testing.T) {
	dir, m := missingBinary(t)
	msg := filepath.Join(dir, "Dockerfile") + ":2: bin/app: not in the build context " + dir +
		": the build will fail at this COPY/ADD; make the file before building (in a benchctl checkout, `make examples` builds the examples' bin/ binaries), or fix the COPY/ADD line"
	code, _, errs := runTTY(t, true, "validate", "--manifest", m)
	if want := "WARN  " + msg + "\n"; code != 0 || errs != want {
		t.Fatalf("terminal: exit %d\n got %q\nwant %q", code, errs, want)
	}
	code, _, errs = runTTY(t, false, "validate", "--manifest", m)
	pipe := regexp.MustCompile(`^time=\d{4}-\d\d-\d\dT[^ ]+ level=WARN msg="` + regexp.QuoteMeta(strings.ReplaceAll(msg, `"`, `\"`)) + `"\n$`)
	if code != 0 || !pipe.MatchString(errs) {
		t.Fatalf("pipe: exit %d\n got %q\nwant %s", code, errs, pipe)
	}
	code, _, errs = runTTY(t, true, "validate", "--manifest", m, "--log-format", "json")
	if code != 0 || !strings.HasPrefix(errs, `{"time":"`) || !strings.Contains(errs, `"level":"WARN","msg":"`+filepath.Join(dir, "Dockerfile")+`:2: bin/app`) {
		t.Fatalf("json: exit %d %q", code, errs)
	}
	// The dry run plans and warns; it does not fail.
	code, out, errs := runTTY(t, true, "run", "--dry-run", "--manifest", m, "--shared-dir", t.TempDir())
	if code != 0 || !strings.Contains(errs, "WARN  "+msg+"\n") || !strings.Contains(out, "docker run") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
}

// Attributes are slog's text (quoted where needed); a debug record is not shown at info.
func TestCompactHandler(t *testing.T) {
	var b bytes.Buffer
	s := iostreams.New(nil, &b, &b)
	s.SetStderrTTY(true)
	if err := setupLogging(s, &globalOptions{logLevel: "info", logFormat: "text"}); err != nil {
		t.Fatal(err)
	}
	defer setupLogging(iostreams.New(nil, os.Stdout, os.Stderr), &globalOptions{logLevel: "info", logFormat: "text"})
	l := slog.Default().With("job", 41).WithGroup("g")
	l.Info("building", "manifest", "allreduce", "cache", "/a b")
	l.Debug("hidden")
	slog.Default().Error("job failed", "why", "x\ny")
	want := "INFO  building job=41 g.manifest=allreduce g.cache=\"/a b\"\nERROR job failed why=\"x\\ny\"\n"
	if b.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// validate's YAML says on its first line that it is a report, not a manifest to read back
// (it has path and digest; env is a list), as the docs say; -o json is the same report.
func TestValidatePrintsAReport(t *testing.T) {
	code, out, errs := run(t, "validate", "--manifest", "../../models/dummy/benchmark.yaml")
	if code != 0 || !strings.HasPrefix(out, commands.ResolvedHeader+"\nname: dummy\npath: ") {
		t.Fatalf("exit %d %s\n%s", code, errs, out)
	}
	code, out, _ = run(t, "validate", "--manifest", "../../models/dummy/benchmark.yaml", "-o", "json")
	if code != 0 || !strings.HasPrefix(out, "{\n") || !strings.Contains(out, `"digest": "sha256:`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	tutorial, err := os.ReadFile("../../docs/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tutorial), commands.ResolvedHeader) {
		t.Fatalf("docs/tutorial.md does not show validate's first line %q", commands.ResolvedHeader)
	}
}

// init writes a command that runs in the image it names: the copied program for FROM
// scratch, a shell one-liner for an image with a shell, and --image for a prebuilt image.
func TestInitCommandRunsInItsImage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		dockerfile string
		args       []string
		want       string
	}{
		{"FROM scratch\nCOPY bin/allreduce /allreduce\n", nil, `    command: ["/allreduce"]   # the program the Dockerfile copies (FROM scratch has no shell); add its arguments`},
		{"FROM scratch\n", nil, `    command: ["/benchmark"]   # FROM scratch has no shell: the program itself; use the path your Dockerfile copies it to`},
		{"FROM debian:12\nCOPY run.sh /run.sh\n", nil, `    command: ["sh", "-c", "echo performance: 1 samples_per_second"]   # exec form: a list; this one needs a shell in the image`},
		{"", []string{"--image", "rocm/pytorch:6.4"}, "  ref: \"rocm/pytorch:6.4\""},
	} {
		sub := t.TempDir()
		args := append([]string{"init", "--file", filepath.Join(sub, "benchmark.yaml")}, tc.args...)
		if tc.dockerfile != "" {
			os.WriteFile(filepath.Join(sub, "Dockerfile"), []byte(tc.dockerfile), 0o644)
			args = append(args, "--dockerfile", filepath.Join(sub, "Dockerfile"))
		}
		code, _, errs := run(t, args...)
		text, _ := os.ReadFile(filepath.Join(sub, "benchmark.yaml"))
		if code != 0 || !strings.Contains(string(text), "\n"+tc.want) {
			t.Fatalf("%v: exit %d %s\n%s", args, code, errs, text)
		}
		if code, _, errs := run(t, "validate", "--manifest", filepath.Join(sub, "benchmark.yaml")); code != 0 {
			t.Fatalf("%v: the starter does not validate: %s", args, errs)
		}
	}
	for _, bad := range [][]string{
		{"init", "--image", "Bad Ref", "--file", filepath.Join(dir, "x.yaml")},
		{"init", "--image", "alpine", "--dockerfile", "Dockerfile"},
		{"init", "--example", "dummy", "--name", "x"},
		{"init", "--dir", dir},
		{"init", "--dockerfile", filepath.Join(dir, "none")},
	} {
		if code, _, errs := run(t, bad...); code != 4 || !strings.Contains(errs, "hint: ") {
			t.Errorf("%v: exit %d\n%s", bad, code, errs)
		}
	}
}

// init --example writes a shipped example into a new folder, for a benchctl installed
// without a checkout; list names them; an unknown name lists them in the error.
func TestInitExample(t *testing.T) {
	code, out, _ := run(t, "init", "--example", "list")
	if code != 0 || out != "allreduce\ncpubench\ndummy\n" {
		t.Fatalf("exit %d %q", code, out)
	}
	dir := filepath.Join(t.TempDir(), "ar")
	code, out, errs := run(t, "init", "--example", "allreduce", "--dir", dir)
	if code != 0 || out != dir+"\n" || !strings.Contains(errs, "\n  CGO_ENABLED=0 go build -C "+dir+" -o bin/allreduce .\n  benchctl validate --manifest "+dir+"/benchmark.yaml\n") {
		t.Fatalf("exit %d %q %s", code, out, errs)
	}
	if code, _, errs := run(t, "validate", "--manifest", filepath.Join(dir, "benchmark.yaml")); code != 0 || !strings.Contains(errs, "bin/allreduce: not in the build context") {
		t.Fatalf("exit %d: before go build, validate warns of the missing binary: %s", code, errs)
	}
	if code, _, errs := run(t, "init", "--example", "allreduce", "--dir", dir); code != 4 || !strings.Contains(errs, "already exists") {
		t.Fatalf("exit %d %s", code, errs)
	}
	if code, _, errs := run(t, "init", "--example", "nccl"); code != 4 || !strings.Contains(errs, `there is no example "nccl"; the examples are: allreduce, cpubench, dummy`) {
		t.Fatalf("exit %d %s", code, errs)
	}
}

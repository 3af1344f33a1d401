package image

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

// ctxDir creates a build context with a Dockerfile, a .dockerignore and some files.
func ctxDir(t *testing.T) BuildInput {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, body string, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("Dockerfile", "FROM ${BASE}\nCOPY . /app\n", 0o644)
	write(".dockerignore", "*.log\nbuild/\n!build/keep.txt\n**/secret*\n", 0o644)
	write("run.sh", "echo hi\n", 0o755)
	write("src/main.go", "package main\n", 0o644)
	write("debug.log", "noise\n", 0o644)
	write("build/out.bin", "binary\n", 0o644)
	write("build/keep.txt", "keep\n", 0o644)
	write("src/deep/secret.txt", "token\n", 0o600)
	return BuildInput{Dockerfile: filepath.Join(dir, "Dockerfile"), Context: dir,
		BuildArgs: []manifest.EnvVar{{Name: "BASE", Value: "alpine:3.20"}}}
}

func mustKey(t *testing.T, in BuildInput) string {
	t.Helper()
	k, err := Key(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 64 {
		t.Fatalf("key %q is not 64 hex digits", k)
	}
	return k
}

func TestKeyStabilityAndSensitivity(t *testing.T) {
	cases := []struct {
		name    string
		change  func(t *testing.T, in *BuildInput)
		changes bool
	}{
		{"nothing", func(t *testing.T, in *BuildInput) {}, false},
		{"mtime of a file", func(t *testing.T, in *BuildInput) {
			future := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(in.Context, "run.sh"), future, future)
		}, false},
		{"content of an ignored file", func(t *testing.T, in *BuildInput) {
			os.WriteFile(filepath.Join(in.Context, "debug.log"), []byte("other"), 0o644)
		}, false},
		{"new file in an ignored folder", func(t *testing.T, in *BuildInput) {
			os.WriteFile(filepath.Join(in.Context, "build", "new.bin"), []byte("x"), 0o644)
		}, false},
		{"ignored by a ** pattern", func(t *testing.T, in *BuildInput) {
			os.WriteFile(filepath.Join(in.Context, "src/deep/secret.txt"), []byte("other"), 0o600)
		}, false},
		{"whitespace in the Dockerfile", func(t *testing.T, in *BuildInput) {
			os.WriteFile(in.Dockerfile, []byte("FROM ${BASE}\nCOPY . /app \n"), 0o644)
		}, true},
		{"content of a context file", func(t *testing.T, in *BuildInput) {
			os.WriteFile(filepath.Join(in.Context, "src/main.go"), []byte("package main // v2\n"), 0o644)
		}, true},
		{"re-included file", func(t *testing.T, in *BuildInput) {
			os.WriteFile(filepath.Join(in.Context, "build/keep.txt"), []byte("changed\n"), 0o644)
		}, true},
		{"a mode bit", func(t *testing.T, in *BuildInput) { os.Chmod(filepath.Join(in.Context, "run.sh"), 0o744) }, true},
		{"a new empty folder", func(t *testing.T, in *BuildInput) { os.Mkdir(filepath.Join(in.Context, "empty"), 0o755) }, true},
		{"a build arg", func(t *testing.T, in *BuildInput) {
			in.BuildArgs = []manifest.EnvVar{{Name: "BASE", Value: "alpine:3.21"}}
		}, true},
		{"the target", func(t *testing.T, in *BuildInput) { in.Target = "run" }, true},
		{"the platform", func(t *testing.T, in *BuildInput) { in.Platform = "linux/arm64" }, true},
		{"the .dockerignore", func(t *testing.T, in *BuildInput) {
			os.WriteFile(filepath.Join(in.Context, ".dockerignore"), []byte("*.log\n"), 0o644)
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := ctxDir(t)
			before := mustKey(t, in)
			c.change(t, &in)
			after := mustKey(t, in)
			if (before != after) != c.changes {
				t.Errorf("key changed = %v, want %v", before != after, c.changes)
			}
		})
	}
}

func TestKeySameInAnotherFolder(t *testing.T) {
	a, b := ctxDir(t), ctxDir(t)
	if mustKey(t, a) != mustKey(t, b) {
		t.Error("the same context in two folders has two keys")
	}
}

func TestDockerignore(t *testing.T) {
	rules, err := parseDockerignore([]byte("# comment\n*.log\n/build\n!build/keep.txt\n**/tmp\ndocs/*.md\n"))
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		"a.log": true, "dir/a.log": false, "build": true, "build/x": true, "build/keep.txt": false,
		"tmp": true, "a/b/tmp/c": true, "docs/x.md": true, "docs/sub/x.md": false, "main.go": false,
	} {
		if got := rules.ignored(rel); got != want {
			t.Errorf("ignored(%q) = %v, want %v", rel, got, want)
		}
	}
	if _, err := parseDockerignore([]byte("[abc\n")); err == nil {
		t.Error("bad pattern accepted")
	}
}

func TestBaseImages(t *testing.T) {
	df := []byte("ARG BASE\nFROM --platform=linux/amd64 ${BASE} AS build\nRUN x\nfrom scratch\nCOPY --from=build /a /a\n")
	got := BaseImages(df, []manifest.EnvVar{{Name: "BASE", Value: "rocm/pytorch:6.4"}})
	if len(got) != 2 || got[0] != "rocm/pytorch:6.4" || got[1] != "scratch" {
		t.Errorf("BaseImages = %v", got)
	}
}

func TestBadDockerignoreIsInvalidInput(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".dockerignore"), []byte("# ok\n*.log\n[\n"), 0o644)
	err := CheckDockerignore(BuildInput{Context: dir})
	var ie *IgnoreError
	if !errors.As(err, &ie) || !ie.InvalidInput() || ie.Line != 3 ||
		!strings.Contains(err.Error(), filepath.Join(dir, ".dockerignore")+":3: \"[\" is not a valid pattern") {
		t.Fatalf("%v", err)
	}
	if err := CheckDockerignore(BuildInput{Context: t.TempDir()}); err != nil {
		t.Fatalf("no .dockerignore: %v", err)
	}
}

// <Dockerfile>.dockerignore, when there is one, is the ignore file (as BuildKit reads it).
func TestKeyHonoursDockerfileSpecificIgnore(t *testing.T) {
	in := ctxDir(t)
	os.WriteFile(filepath.Join(in.Context, "data.txt"), []byte("v1"), 0o644)
	os.WriteFile(filepath.Join(in.Context, ".dockerignore"), []byte("data.txt\n"), 0o644)
	k1 := mustKey(t, in)
	os.WriteFile(filepath.Join(in.Context, "data.txt"), []byte("v2"), 0o644)
	if mustKey(t, in) != k1 {
		t.Fatal("an ignored file changed the key")
	}
	os.WriteFile(in.Dockerfile+".dockerignore", []byte("nomatch\n"), 0o644)
	k2 := mustKey(t, in)
	os.WriteFile(filepath.Join(in.Context, "data.txt"), []byte("v3"), 0o644)
	if mustKey(t, in) == k2 {
		t.Fatal("data.txt is sent (Dockerfile.dockerignore does not ignore it) but does not change the key")
	}
}

// A context folder reached through a symbolic link is read through it.
func TestKeyOfALinkedContext(t *testing.T) {
	in := ctxDir(t)
	link := filepath.Join(t.TempDir(), "ctx")
	if err := os.Symlink(in.Context, link); err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{Image: manifest.Image{Dockerfile: filepath.Join(link, "Dockerfile"), Context: link, BuildArgs: in.BuildArgs}}
	k1 := mustKey(t, InputFromManifest(m))
	os.WriteFile(filepath.Join(in.Context, "run.sh"), []byte("echo changed\n"), 0o755)
	if mustKey(t, InputFromManifest(m)) == k1 {
		t.Fatal("a change behind the link did not change the key")
	}
}

// An ignored folder that nothing re-includes is not entered (it may be unreadable).
func TestIgnoredFolderIsNotEntered(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads a mode-000 folder anyway; the walk itself is checked below")
	}
	in := ctxDir(t)
	os.WriteFile(filepath.Join(in.Context, ".dockerignore"), []byte("private\n"), 0o644)
	os.Mkdir(filepath.Join(in.Context, "private"), 0o000)
	t.Cleanup(func() { os.Chmod(filepath.Join(in.Context, "private"), 0o755) })
	mustKey(t, in)
}

func TestWalkSkipsIgnoredFolders(t *testing.T) {
	in := ctxDir(t)
	os.MkdirAll(filepath.Join(in.Context, "private", "deep"), 0o755)
	os.WriteFile(filepath.Join(in.Context, "private", "deep", "x"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(in.Context, ".dockerignore"), []byte("private\n"), 0o644)
	files, err := walkContext(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasPrefix(f.rel, "private") {
			t.Errorf("%s listed", f.rel)
		}
	}
}

func TestContextErrorExitKinds(t *testing.T) {
	for err, invalid := range map[error]bool{fs.ErrPermission: true, syscall.EACCES: true, syscall.ELOOP: true, syscall.EIO: false, syscall.ESTALE: false} {
		if got := (&ContextError{Path: "/c/f", Err: &fs.PathError{Op: "open", Path: "/c/f", Err: err}}).InvalidInput(); got != invalid {
			t.Errorf("%v: invalid input %v, want %v", err, got, invalid)
		}
	}
}

// MAD's Dockerfiles write ARG BASE_DOCKER=rocm/pytorch:... then FROM $BASE_DOCKER: the
// base is the default unless a build arg gives another (it was "$BASE_DOCKER" as written).
func TestBaseImagesTakeGlobalArgDefaults(t *testing.T) {
	df := []byte("# CONTEXT {'gpu_vendor': 'AMD'}\nARG BASE_DOCKER=rocm/pytorch:6.4\nARG TAG=\"1.0\"\nFROM $BASE_DOCKER\nARG LATE=x\nFROM busybox:${TAG}\nFROM ${UNSET:-debian:12}\nFROM img${UNSET:+-never}\n")
	for _, c := range []struct {
		args []manifest.EnvVar
		want []string
	}{
		{nil, []string{"rocm/pytorch:6.4", "busybox:1.0", "debian:12", "img"}},
		{[]manifest.EnvVar{{Name: "BASE_DOCKER", Value: "benchctl-testbed/shell:2"}, {Name: "UNSET", Value: "u"}},
			[]string{"benchctl-testbed/shell:2", "busybox:1.0", "u", "img-never"}},
	} {
		if got := BaseImages(df, c.args); !slices.Equal(got, c.want) {
			t.Errorf("BaseImages(%v) = %q, want %q", c.args, got, c.want)
		}
	}
}

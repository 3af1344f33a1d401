package models

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExamplesAreTheShippedFolders(t *testing.T) {
	if got := Examples(); !slices.Equal(got, []string{"allreduce", "cpubench", "dummy"}) {
		t.Fatalf("%v", got)
	}
}

// A written example is a module of its own that builds, with Go alone and no network, the
// binary its Dockerfile copies.
func TestWrittenExampleBuilds(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain")
	}
	for _, name := range Examples() {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			files, err := WriteExample(name, dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Dockerfile", "benchmark.yaml", "go.mod", "main.go", "internal/example/env.go"} {
				if !slices.Contains(files, want) {
					t.Errorf("%s not written: %v", want, files)
				}
			}
			for _, f := range files {
				if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "bin/") {
					t.Errorf("%s written", f)
				}
			}
			cmd := exec.Command(gobin, "build", "-o", "bin/"+name, ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=", "GOWORK=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			if st, err := os.Stat(filepath.Join(dir, "bin", name)); err != nil || st.Size() == 0 {
				t.Fatalf("no binary: %v", err)
			}
		})
	}
}

func TestWriteExampleRefuses(t *testing.T) {
	dir := t.TempDir()
	_, err := WriteExample("nope", filepath.Join(dir, "x"))
	var ue *UnknownExampleError
	if !errors.As(err, &ue) || err.Error() != `there is no example "nope"; the examples are: allreduce, cpubench, dummy` {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("folder made for an unknown example: %v", err)
	}
	// An existing folder is never written into.
	os.WriteFile(filepath.Join(dir, "keep"), []byte("mine"), 0o644)
	if _, err := WriteExample("dummy", dir); !errors.Is(err, os.ErrExist) {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Dockerfile")); !os.IsNotExist(err) {
		t.Fatal("wrote into an existing folder")
	}
}

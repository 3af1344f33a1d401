package models

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The shipped examples' sources, so that a benchctl installed without a checkout (go install
// ...@latest) can write them out: each example's Dockerfile, manifests and Go files, and the
// helper package they share. No binaries (bin/ is built by `make examples` or go build).
//
//go:embed allreduce/Dockerfile allreduce/*.yaml allreduce/*.go
//go:embed cpubench/Dockerfile cpubench/*.yaml cpubench/*.go
//go:embed dummy/Dockerfile dummy/*.yaml dummy/*.go
//go:embed internal/example/*.go
var exampleFS embed.FS

// examplePackage is the import path of the helper package the examples share; a written
// example carries its own copy at internal/example of its own module.
const examplePackage = "github.com/benchctl/benchctl/models/internal/example"

// ExampleGoVersion is the go directive of a written example's go.mod.
const ExampleGoVersion = "1.22"

// Examples are the names of the shipped examples, sorted.
func Examples() []string {
	entries, _ := fs.ReadDir(exampleFS, ".")
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			names = append(names, e.Name())
		}
	}
	return names
}

// UnknownExampleError is an example name that benchctl does not ship: bad input (exit 4).
type UnknownExampleError struct{ Name string }

func (e *UnknownExampleError) Error() string {
	return fmt.Sprintf("there is no example %q; the examples are: %s", e.Name, strings.Join(Examples(), ", "))
}

// InvalidInput marks the error as bad input.
func (e *UnknownExampleError) InvalidInput() bool { return true }

// WriteExample writes the example name into the folder dir, which must not exist yet: its
// Dockerfile, manifests and Go sources (tests left out), a go.mod, and its own copy of the
// helper package the examples share, so that `CGO_ENABLED=0 go build -o bin/NAME .` in dir
// builds the binary its Dockerfile copies. It returns the files written, relative to dir.
func WriteExample(name, dir string) ([]string, error) {
	if !slices.Contains(Examples(), name) {
		return nil, &UnknownExampleError{Name: name}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"go.mod": fmt.Appendf(nil, "module %s\n\ngo %s\n", name, ExampleGoVersion),
	}
	add := func(from, to string) error {
		entries, err := fs.ReadDir(exampleFS, from)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			data, err := exampleFS.ReadFile(path.Join(from, e.Name()))
			if err != nil {
				return err
			}
			if strings.HasSuffix(e.Name(), ".go") {
				data = []byte(strings.ReplaceAll(string(data), `"`+examplePackage+`"`, `"`+name+`/internal/example"`))
			}
			files[path.Join(to, e.Name())] = data
		}
		return nil
	}
	if err := errors.Join(add(name, "."), add("internal/example", "internal/example")); err != nil {
		return nil, err
	}
	var written []string
	for rel := range files {
		written = append(written, rel)
	}
	slices.Sort(written)
	for _, rel := range written {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, files[rel], 0o644); err != nil {
			return nil, err
		}
	}
	return written, nil
}

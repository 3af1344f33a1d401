package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/models"
)

// InitExample writes a shipped example into a new folder (init --example NAME), or lists
// the examples (--example list) on stdout, one a line.
func InitExample(_ context.Context, io iostreams.Streams, opts *InitOptions) error {
	if opts.Example == "list" {
		for _, n := range models.Examples() {
			fmt.Fprintln(io.Out(), n)
		}
		return nil
	}
	dir := opts.Dir
	if dir == "" {
		dir = opts.Example
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	files, err := models.WriteExample(opts.Example, dir)
	var ue *models.UnknownExampleError
	switch {
	case errors.As(err, &ue):
		return exitcode.Usagef("benchctl init --example list lists them", "%v", err)
	case errors.Is(err, os.ErrExist):
		return exitcode.Usagef("remove it first or pick another folder with --dir", "%s already exists; benchctl init never writes into an existing folder", dir)
	case err != nil:
		return err
	}
	fmt.Fprintln(io.Out(), dir)
	fmt.Fprintf(io.ErrOut(), "wrote the %s example into %s: %s\n", opts.Example, dir, strings.Join(files, ", "))
	fmt.Fprintf(io.ErrOut(), "build the binary its Dockerfile copies (Go %s or newer), then check it:\n  CGO_ENABLED=0 go build -C %s -o bin/%s .\n  benchctl validate --manifest %s\n",
		models.ExampleGoVersion, dir, opts.Example, filepath.Join(dir, "benchmark.yaml"))
	return nil
}

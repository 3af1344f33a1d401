package commands

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// cleanup --runtime process ends process groups, so an --engine beside it is refused (exit 4)
// before anything is looked for; a job with nothing left on this node says so.
func TestCleanupRuntimeProcess(t *testing.T) {
	var out bytes.Buffer
	io := iostreams.New(nil, &out, &bytes.Buffer{})
	err := Cleanup(context.Background(), io, &CleanupOptions{Job: "42", SharedDir: t.TempDir(), Host: "n1", Outcome: "lost", Runtime: "process", Engine: "docker"})
	if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "--engine docker with --runtime process") {
		t.Fatalf("--engine with --runtime process: %v", err)
	}
	err = Cleanup(context.Background(), io, &CleanupOptions{Job: "cleanup-test-nothing", SharedDir: t.TempDir(), Host: "n1", Outcome: "lost", Runtime: "process"})
	if err != nil || !strings.Contains(out.String(), "nothing to clean up for job cleanup-test-nothing on n1") {
		t.Fatalf("%v: %q", err, out.String())
	}
}

package commands

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// job-archive of a job the shared directory does not have is bad input naming it; of one
// it has, a tar stream on stdout.
func TestJobArchive(t *testing.T) {
	shared := t.TempDir()
	var out bytes.Buffer
	io := iostreams.New(nil, &out, &bytes.Buffer{})
	err := JobArchive(t.Context(), io, &JobArchiveOptions{Job: "k8s-1", SharedDir: shared})
	if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "no folder of job k8s-1") {
		t.Errorf("a job not there: %v", err)
	}
	os.MkdirAll(filepath.Join(shared, "jobs", "k8s-1"), 0o755)
	os.WriteFile(filepath.Join(shared, "jobs", "k8s-1", "job.json"), []byte("{}"), 0o644)
	if err := JobArchive(t.Context(), io, &JobArchiveOptions{Job: "k8s-1", SharedDir: shared}); err != nil || !bytes.Contains(out.Bytes(), []byte("k8s-1/job.json")) {
		t.Errorf("archive: %v, %d bytes", err, out.Len())
	}
	agent := filepath.Join(t.TempDir(), "benchctl-agent")
	os.WriteFile(agent, []byte("agent"), 0o755)
	t.Setenv("BENCHCTL_AGENT", agent)
	dir := t.TempDir()
	if err := SelfCopy(t.Context(), io, &dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "benchctl-agent")); err != nil || string(b) != "agent" {
		t.Errorf("the agent copied: %q %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "benchctl")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("benchctl copied: %v %v", st, err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if err := SelfCopy(t.Context(), io, &missing); err == nil || !strings.Contains(err.Error(), "copying") {
		t.Errorf("self-copy into a folder that does not exist: %v", err)
	}
}

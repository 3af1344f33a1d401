package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/jobdir"
)

// A run writes node.json as its benchmark starts (beside the critical path), and before the
// node ends: the image it runs (as its engine has it), benchctl's version, and why the
// engine's version is missing (the fake answers none).
func TestRunWritesTheNodeRecord(t *testing.T) {
	eng := &runEngine{}
	r := runLocal(t, eng, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var fr safefile.Reader
	rec, err := jobdir.ReadNodeRecord(&fr, filepath.Join(r.res.NodeDir, jobdir.NodeRecordFile))
	if err != nil {
		t.Fatalf("no node.json when the node ended: %v", err)
	}
	if len(rec.Images) != 1 || rec.Images[0].ID != fakeID || rec.Images[0].Name != "of b" || rec.Benchctl != "test" || rec.Job != "j1" ||
		rec.GPU.Vendor != "none" || rec.Machine.Kernel.Release == "" {
		t.Errorf("node.json: %+v", rec)
	}
	if !strings.Contains(eng.called(), "version") {
		t.Errorf("the engine was not asked its version: %s", eng.called())
	}
}

// A node.json that cannot be written (a folder of that name is in the way) is a warning:
// the benchmark still runs and the node succeeds.
func TestRunSucceedsWhenTheNodeRecordCannotBeWritten(t *testing.T) {
	env := map[string]string{"NODE_RANK": "0", "NNODES": "1", "BENCHCTL_JOB_ID": "j1"}
	node, err := DetectNode(testutil.LookupOf(env))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nd := jobdir.Layout{Shared: filepath.Join(dir, "shared")}.Job("j1", 0).Node(0, node.Host)
	if err := os.MkdirAll(filepath.Join(nd.NodeRecord(), "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runNodeOf(t, &runEngine{}, "benchmarks:\n- {name: b, command: [/b]}\n", env, dir, nil)
	if r.err != nil || r.st == nil || r.st.Outcome != OutcomeSuccess {
		t.Fatalf("Run: %v, status %+v", r.err, r.st)
	}
	if !strings.Contains(r.log, "could not write the node record") {
		t.Errorf("no warning in the log:\n%s", r.log)
	}
}

// A node whose image phase fails still leaves node.json, saying why it names no image: the
// node whose image did not arrive is the one most worth comparing.
func TestNodeRecordWhenTheImagePhaseFails(t *testing.T) {
	env := map[string]string{"NODE_RANK": "0", "NNODES": "1", "BENCHCTL_JOB_ID": "j1"}
	dir := t.TempDir()
	r := runNodeOf(t, &runEngine{}, "benchmarks:\n- {name: b, command: [/b], image: {ref: 'absent:1', pull: never}}\n", env, dir, nil)
	if r.err == nil {
		t.Fatal("the run succeeded without its image")
	}
	node, _ := DetectNode(testutil.LookupOf(env))
	nd := jobdir.Layout{Shared: filepath.Join(dir, "shared")}.Job("j1", 0).Node(0, node.Host)
	var fr safefile.Reader
	rec, err := jobdir.ReadNodeRecord(&fr, nd.NodeRecord())
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Images) != 0 || !strings.Contains(rec.Unavailable["images"], "the image phase failed: ") || rec.Machine.Kernel.Release == "" {
		t.Errorf("node.json: images %+v, unavailable %q", rec.Images, rec.Unavailable["images"])
	}
}

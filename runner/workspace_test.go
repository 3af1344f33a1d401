package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/workspace"
)

// madCheckout is a checkout laid out as MAD's: models.json, data.json, docker/, scripts/
// with a model folder and scripts/common, and a perf CSV an earlier madengine run left at
// its top and a run_directory of its own.
func madCheckout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range map[string]string{
		"models.json":                           "[]",
		"data.json":                             `{"huggingface": {}}`,
		"docker/x.Dockerfile":                   "FROM scratch\n",
		"scripts/vllm/run.sh":                   "./vllm_benchmark_report.sh\n",
		"scripts/vllm/vllm_benchmark_report.sh": "mv perf_x.csv ../\n",
		"scripts/common/lib.sh":                 "lib\n",
		"perf_x.csv":                            "stale,from,madengine\n",
		"run_directory/old.txt":                 "madengine's own\n",
	} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func workspaceBench(checkout, runDir, results string) manifest.Benchmark {
	return manifest.Benchmark{Name: "pyt_vllm_x", Command: []string{"bash", "run.sh"}, Workdir: manifest.ModelWorkspace + "/" + manifest.ModelRunDirectory,
		Results: results, Model: &manifest.Model{Catalog: filepath.Join(checkout, "models.json"), RunDir: runDir}}
}

// The spec of a MAD model: the workspace at /myworkspace instead of the manifest's mount
// there, the checkout read-only, the working folder the run directory.
func TestWorkspaceSpec(t *testing.T) {
	checkout := madCheckout(t)
	b := workspaceBench(checkout, "scripts/vllm", "perf_x.csv")
	m := &manifest.Manifest{Name: "m", Mounts: []manifest.Mount{{Source: checkout, Target: "/myworkspace", ReadOnly: true}, {Source: "/data", Target: "/data"}}}
	s := BuildSpecAt(m, b, Node{World: 1}, "img", "k", RunDirs{Results: "/r", Workspace: "/ws"}, GPUAccess{Vendor: "none"}, nil)
	want := []manifest.Mount{{Source: "/data", Target: "/data"}, {Source: "/ws", Target: "/myworkspace"}, {Source: checkout, Target: workspace.CheckoutMount, ReadOnly: true}, {Source: "/r", Target: OutputDir}}
	if len(s.Mounts) != len(want) {
		t.Fatalf("mounts %+v", s.Mounts)
	}
	for i := range want {
		if s.Mounts[i] != want[i] {
			t.Errorf("mount %d: %+v, want %+v", i, s.Mounts[i], want[i])
		}
	}
	if s.Workdir != "/myworkspace/run_directory" || s.Workspace != "/myworkspace" {
		t.Errorf("workdir %s, workspace %s", s.Workdir, s.Workspace)
	}
	// Under tools the run directory is the tools' directory too, as in madengine, and the
	// tools' script paths are the workspace's.
	tools := []manifest.Tool{{Name: "tr", Pre: []manifest.ToolScript{{Path: "scripts/common/lib.sh"}}}}
	s = withTools(s, tools)
	if s.Tools.Dir != "/myworkspace/run_directory" || !strings.Contains(s.Command[2], `_bctl_W=$(cd /myworkspace && pwd)`) || strings.Contains(s.Command[2], "_bctl_a[_bctl_i]=") {
		t.Errorf("tools: dir %s\n%s", s.Tools.Dir, s.Command[2])
	}
}

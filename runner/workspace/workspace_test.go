package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
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

// For the process runtime, which mounts nothing, the links point into the checkout itself,
// and they resolve on the node: a model reads its checkout's files through them.
func TestMakeWorkspaceForAProcess(t *testing.T) {
	checkout := madCheckout(t)
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 0, "n1")
	nd := jobdir.Layout{Shared: shared}.Job("1", 0).Node(0, "n1")
	b := workspaceBench(checkout, "scripts/vllm", "perf_x.csv")
	ws, err := Make(context.Background(), nf, nd, "", b.Name, b, 0o755, true)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(checkout)
	if l, err := os.Readlink(filepath.Join(ws, "models.json")); err != nil || l != filepath.Join(abs, "models.json") {
		t.Errorf("link %q %v, want into %s", l, err, abs)
	}
	if _, err := os.ReadFile(filepath.Join(ws, "models.json")); err != nil {
		t.Errorf("the link does not resolve on the node: %v", err)
	}
}

// The workspace links every entry of the checkout's top folder to the checkout's mount
// (not madengine's own run_directory), and the run directory is a copy of the script's
// folder: what the model writes there, or moves to ../, stays in the node's folder.
func TestMakeWorkspace(t *testing.T) {
	checkout := madCheckout(t)
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 2, "n3")
	nd := jobdir.Layout{Shared: shared}.Job("1", 0).Node(2, "n3")
	b := workspaceBench(checkout, "scripts/vllm", "perf_x.csv")
	ws, err := Make(context.Background(), nf, nd, "", b.Name, b, 0o755, false)
	if err != nil {
		t.Fatal(err)
	}
	if ws != nd.Workspace(b.Name) {
		t.Errorf("workspace %s, want %s", ws, nd.Workspace(b.Name))
	}
	for _, name := range []string{"models.json", "data.json", "docker", "scripts", "perf_x.csv"} {
		if l, err := os.Readlink(filepath.Join(ws, name)); err != nil || l != CheckoutMount+"/"+name {
			t.Errorf("%s: link %q %v, want %s/%s", name, l, err, CheckoutMount, name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "run_directory", "vllm_benchmark_report.sh")); err != nil || string(b) != "mv perf_x.csv ../\n" {
		t.Errorf("the run directory's helper: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "run_directory", "old.txt")); err == nil {
		t.Error("the checkout's own run_directory reached the workspace")
	}
	// A second run of the same name starts afresh.
	os.WriteFile(filepath.Join(ws, "run_directory", "marker"), nil, 0o644)
	if _, err := Make(context.Background(), nf, nd, "", b.Name, b, 0o755, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "run_directory", "marker")); err == nil {
		t.Error("an earlier run's file is left in the workspace")
	}
	// A script folder that became bad since the load fails the run with the reason.
	os.Symlink("/etc", filepath.Join(checkout, "scripts/vllm/etc"))
	if _, err := Make(context.Background(), nf, nd, "", b.Name, b, 0o755, false); err == nil || !strings.Contains(err.Error(), "leads out of the checkout") {
		t.Errorf("a link out of the checkout: %v", err)
	}
}

// KeepResults looks where madengine looks, in its order: the output folder, the
// workspace's top, the run directory (also where the tools moved it); what it finds is
// copied into the results folder; a link out of its folder or a FIFO is not read.
func TestKeepResultsSearchOrder(t *testing.T) {
	b := workspaceBench("/checkout", "scripts/vllm", "perf_x.csv")
	setup := func(t *testing.T) (results, ws string) {
		results, ws = t.TempDir(), t.TempDir()
		os.MkdirAll(filepath.Join(ws, "run_directory"), 0o755)
		return
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	t.Run("the output folder first", func(t *testing.T) {
		results, ws := setup(t)
		os.WriteFile(filepath.Join(results, "perf_x.csv"), []byte("out"), 0o644)
		os.WriteFile(filepath.Join(ws, "perf_x.csv"), []byte("top"), 0o644)
		if from, _, err := KeepResults(b, results, ws); from != "" || err != nil || read(filepath.Join(results, "perf_x.csv")) != "out" {
			t.Errorf("%q %v", from, err)
		}
	})
	t.Run("then the workspace's top", func(t *testing.T) {
		results, ws := setup(t)
		os.WriteFile(filepath.Join(ws, "perf_x.csv"), []byte("top"), 0o644)
		os.WriteFile(filepath.Join(ws, "run_directory", "perf_x.csv"), []byte("rd"), 0o644)
		if from, _, err := KeepResults(b, results, ws); from != filepath.Join(ws, "perf_x.csv") || err != nil || read(filepath.Join(results, "perf_x.csv")) != "top" {
			t.Errorf("%q %v", from, err)
		}
	})
	t.Run("then the run directory", func(t *testing.T) {
		results, ws := setup(t)
		os.WriteFile(filepath.Join(ws, "run_directory", "perf_x.csv"), []byte("rd"), 0o644)
		if from, _, err := KeepResults(b, results, ws); from != filepath.Join(ws, "run_directory", "perf_x.csv") || err != nil || read(filepath.Join(results, "perf_x.csv")) != "rd" {
			t.Errorf("%q %v", from, err)
		}
	})
	t.Run("the run directory the tools moved", func(t *testing.T) {
		results, ws := setup(t)
		os.RemoveAll(filepath.Join(ws, "run_directory"))
		os.MkdirAll(filepath.Join(results, "run_directory"), 0o755)
		os.WriteFile(filepath.Join(results, "run_directory", "perf_x.csv"), []byte("moved"), 0o644)
		if from, _, err := KeepResults(b, results, ws); from == "" || err != nil || read(filepath.Join(results, "perf_x.csv")) != "moved" {
			t.Errorf("%q %v", from, err)
		}
	})
	t.Run("a results path with a folder", func(t *testing.T) {
		results, ws := setup(t)
		b := b
		b.Results = "out/perf.csv"
		os.MkdirAll(filepath.Join(ws, "out"), 0o755)
		os.WriteFile(filepath.Join(ws, "out", "perf.csv"), []byte("sub"), 0o644)
		if from, _, err := KeepResults(b, results, ws); from == "" || err != nil || read(filepath.Join(results, "out", "perf.csv")) != "sub" {
			t.Errorf("%q %v", from, err)
		}
	})
	t.Run("a link out is not followed, a FIFO not read", func(t *testing.T) {
		results, ws := setup(t)
		secret := filepath.Join(t.TempDir(), "secret")
		os.WriteFile(secret, []byte("secret"), 0o600)
		os.Symlink(secret, filepath.Join(ws, "perf_x.csv"))
		syscall.Mkfifo(filepath.Join(ws, "run_directory", "perf_x.csv"), 0o644)
		from, passed, err := KeepResults(b, results, ws)
		if from != "" || err != nil || len(passed) != 2 {
			t.Fatalf("%q %q %v", from, passed, err)
		}
		if _, err := os.Lstat(filepath.Join(results, "perf_x.csv")); err == nil {
			t.Error("something was kept")
		}
	})
	t.Run("a link inside the run directory is followed", func(t *testing.T) {
		results, ws := setup(t)
		os.WriteFile(filepath.Join(ws, "run_directory", "real.csv"), []byte("real"), 0o644)
		os.Symlink("real.csv", filepath.Join(ws, "run_directory", "perf_x.csv"))
		if from, _, err := KeepResults(b, results, ws); from == "" || err != nil || read(filepath.Join(results, "perf_x.csv")) != "real" {
			t.Errorf("%q %v", from, err)
		}
	})
	t.Run("nowhere", func(t *testing.T) {
		results, ws := setup(t)
		if from, passed, err := KeepResults(b, results, ws); from != "" || err != nil || len(passed) != 0 {
			t.Errorf("%q %q %v", from, passed, err)
		}
	})
}

// A model with a url runs in a copy of the job's clone (without its .git), named as git
// names the clone, with its script folder copied over it, as madengine copies it; the
// results are looked for there.
func TestMakeWorkspaceOfAURLModel(t *testing.T) {
	checkout := madCheckout(t)
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 0, "n1")
	dir := jobdir.Layout{Shared: shared}.Job("1", 0)
	nd := dir.Node(0, "n1")
	const url = "https://example.com/org/tiny-model.git"
	clone := filepath.Join(dir.Clones(), manifest.CloneKey(url))
	for p, body := range map[string]string{"train.py": "print(1)\n", "run.sh": "from the repository\n", ".git/HEAD": "ref: refs/heads/main\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(clone, p)), 0o755)
		os.WriteFile(filepath.Join(clone, p), []byte(body), 0o644)
	}
	b := workspaceBench(checkout, "scripts/vllm", "perf_x.csv")
	b.Model.URL, b.Workdir = url, manifest.ModelWorkspace+"/tiny-model"
	ws, err := Make(context.Background(), nf, nd, dir.Clones(), b.Name, b, 0o755, false)
	if err != nil {
		t.Fatal(err)
	}
	rd := filepath.Join(ws, "tiny-model")
	for f, want := range map[string]string{"train.py": "print(1)\n", "run.sh": "./vllm_benchmark_report.sh\n", "vllm_benchmark_report.sh": "mv perf_x.csv ../\n"} {
		if b, err := os.ReadFile(filepath.Join(rd, f)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q (the script folder over the clone)", f, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(rd, ".git")); err == nil {
		t.Error("the clone's .git was copied")
	}
	if _, err := os.Lstat(filepath.Join(ws, manifest.ModelRunDirectory)); err == nil {
		t.Error("a url model got a run_directory too")
	}
	os.WriteFile(filepath.Join(rd, "perf_x.csv"), []byte("in the clone"), 0o644)
	results := t.TempDir()
	if from, _, err := KeepResults(b, results, ws); from != filepath.Join(rd, "perf_x.csv") || err != nil {
		t.Errorf("results: %q %v", from, err)
	}
}

// A checkout whose top folder holds more entries than a workspace links to fails the run
// with the bound, rather than making 10,001 links per run.
func TestAWorkspaceOfAHugeCheckoutIsRefused(t *testing.T) {
	checkout := madCheckout(t)
	for i := range maxCheckoutEntries {
		f, err := os.Create(filepath.Join(checkout, "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 0, "n1")
	nd := jobdir.Layout{Shared: shared}.Job("1", 0).Node(0, "n1")
	b := workspaceBench(checkout, "scripts/vllm", "perf_x.csv")
	if _, err := Make(context.Background(), nf, nd, "", b.Name, b, 0o755, false); err == nil || !strings.Contains(err.Error(), "holds more than 10000 entries in its top folder") {
		t.Fatalf("got %v", err)
	}
}

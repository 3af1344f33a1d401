package runner

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// runProcesses runs a one-node job of body with runtime: process: no engine is asked for.
func runProcesses(t *testing.T, body string, environ []string) (localRun, jobdir.NodeDir) {
	t.Helper()
	return runProcessesOn(t, "{vendor: none}", "", nil, body, environ)
}

// runProcessesOn is runProcesses with gpu, a recorded sysfs tree (sysfsRoot) and the
// scheduler's variables alloc (its GPU allocation).
func runProcessesOn(t *testing.T, gpu, sysfsRoot string, alloc map[string]string, body string, environ []string) (localRun, jobdir.NodeDir) {
	t.Helper()
	dir := t.TempDir()
	m, _, err := manifest.Parse("m.yaml", filepath.Join(dir, "m.yaml"), []byte("name: t\nruntime: process\ngpu: "+gpu+"\n"+body), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NODE_RANK": "0", "NNODES": "1", "BENCHCTL_JOB_ID": "p1"}
	for k, v := range alloc {
		env[k] = v
	}
	lookup := testutil.LookupOf(env)
	node, err := DetectNode(lookup)
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared")
	nd := jobdir.Layout{Shared: shared}.Job(node.JobID, node.Attempt).Node(node.Rank, node.Host)
	log := &testutil.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // it only has to end
	defer cancel()
	res, err := Run(ctx, Options{Node: node, Manifest: m, SharedDir: shared, Lookup: lookup, Version: "test", Environ: environ, SysfsRoot: sysfsRoot,
		Engine: func() (Engine, error) { t.Fatal("runtime: process asked for an engine"); return nil, nil },
		Log:    slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), log), nil))})
	r := localRun{res: res, err: err, log: log.String()}
	r.st, _ = jobdir.ReadNodeStatus(&safefile.Reader{}, nd)
	return r, nd
}

// runtime: process runs each benchmark as a child process: in its results folder, with
// the node variables, $BENCHCTL_OUTPUT_DIR the folder itself, this benchctl's environment
// without its own variables, and its results read from there; no engine is asked for, and
// job.json and node.json say the runtime.
func TestRunAsProcesses(t *testing.T) {
	body := "benchmarks:\n- name: b\n  command: [sh, -c, 'echo \"rank=$NODE_RANK of $NNODES\"; pwd; echo \"out=$BENCHCTL_OUTPUT_DIR\"; echo \"site=$SITE_MODULE secret=${BENCHCTL_JOB_SECRET-none}\"; printf \"model,performance,metric\\nm,42,u\\n\" > \"$BENCHCTL_OUTPUT_DIR/r.csv\"']\n  results: r.csv\n"
	r, nd := runProcesses(t, body, []string{"PATH=" + os.Getenv("PATH"), "SITE_MODULE=cuda/12", "BENCHCTL_JOB_SECRET=s3cret"})
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, r.log)
	}
	b := benchStatus(t, r.st)
	if b.Outcome != OutcomeSuccess {
		t.Fatalf("outcome %s: %s", b.Outcome, b.Error)
	}
	results := nd.Results("b")
	logText, err := os.ReadFile(filepath.Join(nd.Path, b.Log))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rank=0 of 1\n", results + "\n", "out=" + results + "\n", "site=cuda/12 secret=none\n"} {
		if !strings.Contains(string(logText), want) {
			t.Errorf("the benchmark's log lacks %q:\n%s", want, logText)
		}
	}
	if csv, err := os.ReadFile(filepath.Join(results, "r.csv")); err != nil || !strings.Contains(string(csv), "m,42,u") {
		t.Errorf("results: %q, %v", csv, err)
	}
	job, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(nd.Path)), "job.json"))
	if err != nil || !strings.Contains(string(job), `"kind": "process"`) || !strings.Contains(string(job), `"runtime": "process"`) {
		t.Errorf("job.json does not say the runtime (%v):\n%s", err, job)
	}
	rec, err := os.ReadFile(nd.NodeRecord())
	if err != nil || !strings.Contains(string(rec), "the process runtime runs no image") {
		t.Errorf("node.json (%v):\n%s", err, rec)
	}
}

// A benchmark past its timeout: diagnostics first (the process tree with its commands),
// then its whole group ends, a child it left in the background too.
func TestProcessTimeoutEndsTheGroup(t *testing.T) {
	body := "benchmarks:\n- {name: slow, command: [sh, -c, 'sleep 300 & echo \"child=$!\"; wait'], timeout: 2s}\n"
	r, nd := runProcesses(t, body, []string{"PATH=" + os.Getenv("PATH")})
	b := benchStatus(t, r.st)
	if b.Outcome != OutcomeTimeout {
		t.Fatalf("outcome %s, want timeout: %s", b.Outcome, b.Error)
	}
	logText, _ := os.ReadFile(filepath.Join(nd.Path, b.Log))
	_, pid, ok := strings.Cut(string(logText), "child=")
	if !ok {
		t.Fatalf("no child pid in the log:\n%s", logText)
	}
	pid = strings.TrimSpace(strings.SplitN(pid, "\n", 2)[0])
	if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("the benchmark's child %s outlived its timeout: %s", pid, st)
	}
	diag := filepath.Join(nd.Path, b.Diagnostics)
	var top []byte
	_ = filepath.Walk(diag, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "sleep 300") {
				top = b
			}
		}
		return nil
	})
	if top == nil {
		t.Errorf("no diagnostics in %s name the process tree's commands", diag)
	}
}

// The visibility variables give a process the selected GPUs by the node's own numbering.
func TestGPUAccessForProcess(t *testing.T) {
	amd := GPUAccess{Vendor: gpu.VendorAMD, GPUs: []gpu.GPU{{Index: 4}, {Index: 6}}, Devices: []manifest.Device{{Host: "/dev/kfd"}}, GroupAdd: []string{"44"}}
	got := amd.ForProcess()
	if len(got.Devices) != 0 || len(got.GroupAdd) != 0 || visibleEnv(got) != "HIP_VISIBLE_DEVICES=0,1 ROCR_VISIBLE_DEVICES=4,6" {
		t.Errorf("AMD: %+v", got)
	}
	nv := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: []gpu.GPU{{Index: 1, UUID: "GPU-a"}, {Index: 3, UUID: "GPU-b"}}}
	if got := nv.ForProcess(); len(got.Requests) != 0 || visibleEnv(got) != "CUDA_VISIBLE_DEVICES=GPU-a,GPU-b" {
		t.Errorf("NVIDIA with UUIDs: %+v", got)
	}
	nv.GPUs[1].UUID = ""
	if got := nv.ForProcess(); visibleEnv(got) != "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1,3" {
		t.Errorf("NVIDIA without every UUID: %+v", got)
	}
	if got := (GPUAccess{Vendor: manifest.VendorNone}).ForProcess(); len(got.Env) != 0 {
		t.Errorf("no GPUs: %+v", got)
	}
}

func visibleEnv(a GPUAccess) string {
	var out []string
	for _, e := range a.Env {
		out = append(out, e.Name+"="+e.Value)
	}
	return strings.Join(out, " ")
}

// A node whose scheduler gives it GPU 1 of a recorded MI250X: the process sees that GPU by
// the node's numbering (ROCR_VISIBLE_DEVICES=1, HIP_VISIBLE_DEVICES=0), the log says so, and
// the node's own numbering in benchctl's environment does not reach it under another name.
func TestProcessGPUsByTheNodesNumbering(t *testing.T) {
	body := "benchmarks:\n- {name: g, command: [sh, -c, 'echo \"rocr=$ROCR_VISIBLE_DEVICES hip=$HIP_VISIBLE_DEVICES cuda=${CUDA_VISIBLE_DEVICES-unset}\"']}\n"
	r, nd := runProcessesOn(t, "{vendor: amd, count: 1}", "../tests/fixtures/sysfs/mi250x", map[string]string{"ROCR_VISIBLE_DEVICES": "1"}, body,
		[]string{"PATH=" + os.Getenv("PATH"), "ROCR_VISIBLE_DEVICES=1", "CUDA_VISIBLE_DEVICES=7"})
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, r.log)
	}
	b := benchStatus(t, r.st)
	logText, _ := os.ReadFile(filepath.Join(nd.Path, b.Log))
	if !strings.Contains(string(logText), "rocr=1 hip=0 cuda=unset\n") {
		t.Errorf("the process's GPUs:\n%s", logText)
	}
	if !strings.Contains(r.log, "ROCR_VISIBLE_DEVICES=1") || strings.Contains(r.log, "ROCR_VISIBLE_DEVICES=0") {
		t.Errorf("the log does not say the process's GPUs by the node's numbering:\n%s", r.log)
	}
}

// A path is replaced where it is a whole path or a prefix of one, not where it begins a
// longer name.
func TestReplacePath(t *testing.T) {
	for in, want := range map[string]string{
		"/myworkspace":                      "/ws",
		"/myworkspace/run_directory":        "/ws/run_directory",
		"--dir=/myworkspace/x,/myworkspace": "--dir=/ws/x,/ws",
		"/myworkspace2/x":                   "/myworkspace2/x",
		"a /myworkspace b '/myworkspace'":   "a /ws b '/ws'",
		"PATH=/myworkspace/bin:/usr/bin":    "PATH=/ws/bin:/usr/bin",
		"/myworkspaces/myworkspace":         "/myworkspaces/myworkspace",
		"":                                  "",
	} {
		if got := replacePath(in, "/myworkspace", "/ws"); got != want {
			t.Errorf("replacePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// A MAD model's spec for the process runtime runs in its workspace where it is on the node:
// its folder, command and variables name it, the workspace's and the checkout's mounts are
// gone, and of the catalog's docker options only the limits are left.
func TestProcessWorkspace(t *testing.T) {
	s := Spec{Workdir: manifest.ModelWorkspace + "/run_directory", Command: []string{"bash", "run.sh", "--out", manifest.ModelWorkspace + "/x"},
		Env: []manifest.EnvVar{{Name: "MAD_DIR", Value: manifest.ModelWorkspace}},
		Mounts: []manifest.Mount{{Source: "/node/ws", Target: manifest.ModelWorkspace}, {Source: "/mad", Target: "/benchctl/checkout", ReadOnly: true},
			{Source: "/results", Target: "/results"}},
		Container: manifest.Container{IPC: "private", ShmSize: 1 << 30, CapAdd: []string{"SYS_PTRACE"}, Devices: []manifest.Device{{Host: "/dev/kfd"}},
			Ulimits: []manifest.Limit{{Name: "memlock", Soft: -1, Hard: -1}}}}
	got := processWorkspace(s, "/node/ws")
	if got.Workdir != "/node/ws/run_directory" || got.Command[3] != "/node/ws/x" || got.Env[0].Value != "/node/ws" {
		t.Errorf("paths: %q %q %v", got.Workdir, got.Command, got.Env)
	}
	if len(got.Mounts) != 1 || got.Mounts[0].Target != "/results" {
		t.Errorf("mounts %v", got.Mounts)
	}
	if c := got.Container; c.IPC != "host" || c.ShmSize != 0 || len(c.CapAdd) != 0 || len(c.Devices) != 0 || len(c.Ulimits) != 1 {
		t.Errorf("container %+v", c)
	}
	if s.Command[3] != manifest.ModelWorkspace+"/x" || len(s.Mounts) != 3 {
		t.Error("the spec it was given was changed")
	}
}

// What of a MAD model's catalog recipe the process runtime does not apply is said, each
// docker option by name; nothing for a benchmark of the user's own.
func TestCatalogProcessNotes(t *testing.T) {
	model := manifest.Benchmark{Name: "pyt_vllm", Model: &manifest.Model{Catalog: "/mad/models.json"}, Image: &manifest.Image{Dockerfile: "/mad/docker/pyt_vllm.ubuntu.amd.Dockerfile"},
		Container: &manifest.Container{IPC: "private", ShmSize: 1 << 30, CapAdd: []string{"SYS_PTRACE"}, Devices: []manifest.Device{{Host: "/dev/kfd"}}, SecurityOpt: []string{"seccomp=unconfined"}, GroupAdd: []string{"video"}}}
	notes := strings.Join(catalogProcessNotes(model), "\n")
	for _, want := range []string{"pyt_vllm.ubuntu.amd.Dockerfile is not built", "--ipc private", "--shm-size", "--cap-add SYS_PTRACE", "--device /dev/kfd", "--security-opt seccomp=unconfined", "--group-add video"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes lack %q:\n%s", want, notes)
		}
	}
	own := model
	own.Model = nil
	if catalogProcessNotes(own) != nil || catalogProcessNotes(manifest.Benchmark{Model: &manifest.Model{Catalog: "/mad/models.json"}}) != nil {
		t.Error("notes for a benchmark that is not a MAD model, or has nothing to say")
	}
}

// A launcher's line reaches a process as it reaches a container (torchrun's, on one node),
// and a path it gives under the container's output folder (deepspeed's hostfile) is that
// folder's on the node.
func TestLaunchersUnderTheProcessRuntime(t *testing.T) {
	body := "launcher: torchrun\nbenchmarks:\n- {name: b, command: [sh, -c, 'echo \"runner=$MAD_MULTI_NODE_RUNNER\"']}\n"
	r, nd := runProcesses(t, body, []string{"PATH=" + os.Getenv("PATH")})
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, r.log)
	}
	logText, _ := os.ReadFile(filepath.Join(nd.Path, benchStatus(t, r.st).Log))
	if !strings.Contains(string(logText), "runner=torchrun --standalone --nproc_per_node=") {
		t.Errorf("the launcher's line did not reach the process:\n%s", logText)
	}
	s := processPaths(Spec{Env: []manifest.EnvVar{{Name: "MAD_MULTI_NODE_RUNNER", Value: "deepspeed --hostfile=" + DeepSpeedHostfile + " --master_addr=n1"}}}, "/node/results/b")
	if want := "deepspeed --hostfile=/node/results/b/deepspeed_hostfile --master_addr=n1"; s.Env[0].Value != want {
		t.Errorf("deepspeed's line %q, want %q", s.Env[0].Value, want)
	}
}

// Figures of merit: a benchmark that prints text has its figures read from its output (a
// pattern on stdout, a parser on a file it wrote) into figures.csv, keyed by their groups;
// success's require and forbid, a figure missing and a figure out of bounds each fail the
// benchmark that exited 0, with the reason.
func TestFiguresOfMerit(t *testing.T) {
	script := `printf "batch 1: 120.5 tok/s\nbatch 8: 910 tok/s\nall PASSED\n"; ` +
		`printf "# Size       Latency (us)\n1                       1.52\n8                       1.61\n" > "$BENCHCTL_OUTPUT_DIR/osu.txt"; ` +
		`mkfifo "$BENCHCTL_OUTPUT_DIR/fifo.txt"; ln -s /etc/passwd "$BENCHCTL_OUTPUT_DIR/link.txt"`
	bench := func(extra string) string {
		return "benchmarks:\n- name: b\n  command: [sh, -c, '" + script + "']\n" + extra
	}
	good := bench("  figures:\n  - {metric: tok_s, pattern: 'batch (?P<batch>\\d+): (?P<value>\\S+) tok/s', unit: tok/s, better: higher, min: 100}\n" +
		"  - {parser: osu, from: osu.txt, max: 10}\n  success: {require: [PASSED], forbid: [FAILED]}\n")
	r, nd := runProcesses(t, good, []string{"PATH=" + os.Getenv("PATH")})
	if b := benchStatus(t, r.st); r.err != nil || b.Outcome != OutcomeSuccess {
		t.Fatalf("%v %+v\n%s", r.err, b, r.log)
	}
	csv, err := os.ReadFile(filepath.Join(nd.Results("b"), "figures.csv"))
	want := "model,performance,metric,unit,message_size,figure_key\nb,120.5,tok_s,tok/s,,batch=1\nb,910,tok_s,tok/s,,batch=8\nb,1.52,latency,us,1,\nb,1.61,latency,us,8,\n"
	if err != nil || string(csv) != want {
		t.Errorf("figures.csv %v:\n%s\nwant:\n%s", err, csv, want)
	}
	for extra, why := range map[string]string{
		"  success: {forbid: [PASSED]}\n":                                                               `line 3 matches success.forbid[0] "PASSED"`,
		"  success: {require: [Success=1]}\n":                                                           `no line of the output matches success.require[0] "Success=1"`,
		"  figures: [{metric: m, pattern: 'nothing (?P<value>\\d+)'}]\n":                                `figure m: no line of stdout matches`,
		"  figures: [{metric: tok_s, pattern: 'batch (?P<b>\\d+): (?P<value>\\S+) tok/s', max: 500}]\n": `figure tok_s: tok_s (b=8) is 910, above its max 500`,
		"  figures: [{parser: hpl, from: nothing.txt}]\n":                                               `figure hpl: nothing.txt cannot be read`,
	} {
		r, _ := runProcesses(t, bench(extra), []string{"PATH=" + os.Getenv("PATH")})
		if b := benchStatus(t, r.st); b.Outcome != OutcomeFailure || !strings.Contains(b.Error, "the benchmark exited 0, but "+why) {
			t.Errorf("%s: %s %q", extra, b.Outcome, b.Error)
		}
	}
}

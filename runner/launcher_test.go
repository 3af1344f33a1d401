package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/launch"
)

// A master address with spaces or shell metacharacters is a value in the container's
// environment, not a shell string: it reaches MAD_MULTI_NODE_RUNNER as written (one word of
// the line each time the script splits it), nothing is quoted, run or dropped.
func TestLauncherHostileValues(t *testing.T) {
	evil := "gpu-01; rm -rf / #$(id)`x`\n--master_port=1"
	got, err := launch.Env("torchrun", launch.Context{NNodes: 2, Rank: 1, NProc: 8, Port: 29500, Addr: evil})
	want := "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 --master_addr=" + evil + " --master_port=29500"
	if err != nil || got["MAD_MULTI_NODE_RUNNER"] != want {
		t.Fatalf("got %q, %v", got["MAD_MULTI_NODE_RUNNER"], err)
	}
	b := manifest.Benchmark{Name: "m", Command: []string{"bash", "run.sh"}, Launcher: manifest.LauncherDeepSpeed}
	n := Node{World: 2, Rank: 0, MasterAddr: evil, MasterPort: 29500, Source: "slurm", Hosts: []string{"a b", "c;d"}}
	spec := BuildSpec(&manifest.Manifest{Name: "m"}, b, n, "img", "", "/r", amdNode(8), nil)
	if !slicesEqual(spec.Command, []string{"bash", "run.sh"}) {
		t.Errorf("command %q", spec.Command)
	}
	for _, e := range spec.Env {
		if e.Name == "MAD_MULTI_NODE_RUNNER" && !strings.Contains(e.Value, "--master_addr="+evil+" ") {
			t.Errorf("runner %q", e.Value)
		}
	}
	// Hosts that are no host names cannot be hostfile lines: the job is refused before any
	// container starts.
	if _, err := launch.Env(b.Launcher, launchOf(b, n, amdNode(8))); err == nil || !strings.Contains(err.Error(), `"a b" is no host name`) {
		t.Errorf("deepspeed with host \"a b\": %v", err)
	}
}

// The launcher's own variables are defaults: the benchmark's env wins, MAD_MULTI_NODE_RUNNER
// and MAD_LAUNCHER_TYPE are the node's; a catalog model's settings reach the launcher.
func TestLauncherInTheContainer(t *testing.T) {
	b := manifest.Benchmark{Name: "train", Command: []string{"x"}, Launcher: manifest.LauncherMegatronLM,
		Env: []manifest.EnvVar{{Name: "TENSOR_MODEL_PARALLEL_SIZE", Value: "4"}, {Name: "MAD_MULTI_NODE_RUNNER", Value: "mine"}}}
	n := Node{World: 2, Rank: 1, MasterAddr: "gpu-01", MasterPort: 29500, Source: "slurm", Hosts: []string{"gpu-01", "gpu-02"}}
	env := map[string]string{}
	for _, e := range BuildSpec(&manifest.Manifest{Name: "m"}, b, n, "img", "", "/r", amdNode(8), nil).Env {
		env[e.Name] = e.Value
	}
	for k, want := range map[string]string{
		"TENSOR_MODEL_PARALLEL_SIZE": "4", "PIPELINE_MODEL_PARALLEL_SIZE": "2", "CONTEXT_PARALLEL_SIZE": "1",
		"MAD_LAUNCHER_TYPE":     "megatron-lm",
		"MAD_MULTI_NODE_RUNNER": "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 --master_addr=gpu-01 --master_port=29500",
	} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	// vllm has no MAD_MULTI_NODE_RUNNER in madengine, and gets none here.
	b = manifest.Benchmark{Name: "serve", Command: []string{"x"}, Launcher: manifest.LauncherVLLM}
	for _, e := range BuildSpec(&manifest.Manifest{Name: "m"}, b, n, "img", "", "/r", amdNode(8), nil).Env {
		if e.Name == "MAD_MULTI_NODE_RUNNER" {
			t.Errorf("vllm: %s=%q", e.Name, e.Value)
		}
	}
}

// checkLauncher refuses before any container: on the job's nodes, and on a variant's fewer.
func TestCheckLauncher(t *testing.T) {
	b := manifest.Benchmark{Name: "disagg", Launcher: manifest.LauncherSGLangDisagg}
	n := Node{World: 3, MasterAddr: "a", Source: "slurm", Hosts: []string{"a", "b", "c"}}
	if err := checkLauncher(b, n, amdNode(8), nil); err != nil {
		t.Fatal(err)
	}
	x := &manifest.Experiment{Variants: []manifest.Variant{{Nodes: 3}, {Nodes: 2}}}
	if err := checkLauncher(b, n, amdNode(8), x); err == nil || !strings.Contains(err.Error(), "benchmark disagg: sglang-disagg needs at least 3 nodes") {
		t.Errorf("a variant of 2 nodes: %v", err)
	}
	// Outside Slurm only the master's and this node's names are known: no hostfile.
	n = Node{World: 2, MasterAddr: "a", Source: "env", Hosts: []string{"a", "rank1"}}
	if err := checkLauncher(manifest.Benchmark{Name: "ds", Launcher: manifest.LauncherDeepSpeed}, n, amdNode(8), nil); err == nil {
		t.Error("deepspeed on 2 nodes without their names was accepted")
	}
}

// The hostfile lands in the run's results folder, never through a planted link.
func TestWriteDeepSpeedHostfile(t *testing.T) {
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 0, "n1")
	if err := makeResultsDir(nf, "ds", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := writeDeepSpeedHostfile(nf, "ds", []byte("a slots=8\n")); err != nil {
		t.Fatal(err)
	}
	dir := jobdir.Layout{Shared: shared}.Job("1", 0).Node(0, "n1").Results("ds")
	if b, err := os.ReadFile(filepath.Join(dir, "deepspeed_hostfile")); err != nil || string(b) != "a slots=8\n" {
		t.Fatalf("%q %v", b, err)
	}
	os.Remove(filepath.Join(dir, "deepspeed_hostfile"))
	target := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(dir, "deepspeed_hostfile"))
	// Written anew (a temp file renamed over the name): the link is replaced, never followed.
	if err := writeDeepSpeedHostfile(nf, "ds", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("wrote through the link: victim now %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "deepspeed_hostfile")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the hostfile is not a regular file of its own: %v %v", fi, err)
	}
}

// A Kubernetes job's pods know every node's address, as a Slurm job's tasks know their
// names: the launchers that need them (MPI, deepspeed) get them; MAD_DEPLOYMENT_TYPE says so.
func TestKubernetesNodesGiveTheirHosts(t *testing.T) {
	n := Node{World: 2, Rank: 1, Hosts: []string{"10.0.0.11", "10.0.0.12"}, MasterAddr: "10.0.0.11", Source: jobdir.SourceKubernetes}
	if c := launchOf(manifest.Benchmark{Launcher: manifest.LauncherMPIRun}, n, GPUAccess{}); len(c.Hosts) != 2 {
		t.Errorf("hosts %v", c.Hosts)
	}
	if d := deploymentType(n); d != "kubernetes" {
		t.Errorf("deployment type %q", d)
	}
	n.Source = "env"
	if c := launchOf(manifest.Benchmark{}, n, GPUAccess{}); len(c.Hosts) != 0 || deploymentType(n) != "local" {
		t.Errorf("env: %v %s", c.Hosts, deploymentType(n))
	}
}

package runner

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// Each launcher's variables against what madengine's Slurm deployment exports for the same
// context: ROCm/madengine src/madengine/deployment/slurm.py, _generate_torchrun_command,
// _generate_megatron_command, _generate_torchtitan_command, _generate_deepspeed_command,
// _generate_vllm_command, _generate_sglang_command, _generate_sglang_disagg_command and
// _generate_primus_command (with deployment/primus_backend.py's
// infer_primus_backend_from_model_name). madengine leaves ${NODE_RANK} and ${MASTER_ADDR}
// to the job's shell; the expected strings hold this node's values in their place.
func TestLauncherLinesAreMadengines(t *testing.T) {
	one8 := launch{nnodes: 1, rank: 0, nproc: 8, port: 29500, addr: "gpu-01", hosts: []string{"gpu-01"}}
	two8 := launch{nnodes: 2, rank: 1, nproc: 8, port: 29500, addr: "gpu-01", hosts: []string{"gpu-01", "gpu-02"}}
	four2 := launch{nnodes: 4, rank: 3, nproc: 2, port: 23456, addr: "10.0.0.1", hosts: []string{"a", "b", "c", "d"}}
	six8 := launch{nnodes: 6, rank: 2, nproc: 8, port: 29500, addr: "a", hosts: []string{"a", "b", "c", "d", "e", "f"}}
	primus := launch{nnodes: 2, rank: 0, nproc: 8, port: 29500, addr: "a", hosts: []string{"a", "b"},
		model: "primus_pretrain/torchtitan_MI300X_qwen3_4B-pretrain"}
	for _, c := range []struct {
		name, launcher string
		ctx            launch
		want           map[string]string
	}{
		{"default is torchrun, 1 node", "", one8, map[string]string{"MAD_MULTI_NODE_RUNNER": "torchrun --standalone --nproc_per_node=8"}},
		{"torchrun 1 node", "torchrun", one8, map[string]string{"MAD_MULTI_NODE_RUNNER": "torchrun --standalone --nproc_per_node=8"}},
		{"torchrun 2 nodes", "torchrun", two8, map[string]string{
			"MAD_MULTI_NODE_RUNNER": "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 --master_addr=gpu-01 --master_port=29500"}},
		{"torchrun 4 nodes", "torchrun", four2, map[string]string{
			"MAD_MULTI_NODE_RUNNER": "torchrun --nnodes=4 --nproc_per_node=2 --node_rank=3 --master_addr=10.0.0.1 --master_port=23456"}},
		{"megatron-lm 1 node", "megatron-lm", one8, map[string]string{
			"MAD_MULTI_NODE_RUNNER":      "torchrun --standalone --nproc_per_node=8",
			"TENSOR_MODEL_PARALLEL_SIZE": "8", "PIPELINE_MODEL_PARALLEL_SIZE": "1", "CONTEXT_PARALLEL_SIZE": "1"}},
		{"megatron-lm 1 node, 16 GPUs: tensor parallel at most 8", "megatron-lm", launch{nnodes: 1, nproc: 16, port: 1, addr: "x"}, map[string]string{
			"MAD_MULTI_NODE_RUNNER":      "torchrun --standalone --nproc_per_node=16",
			"TENSOR_MODEL_PARALLEL_SIZE": "8", "PIPELINE_MODEL_PARALLEL_SIZE": "1", "CONTEXT_PARALLEL_SIZE": "1"}},
		{"megatron-lm 2 nodes", "megatron-lm", two8, map[string]string{
			"MAD_MULTI_NODE_RUNNER":      "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 --master_addr=gpu-01 --master_port=29500",
			"TENSOR_MODEL_PARALLEL_SIZE": "8", "PIPELINE_MODEL_PARALLEL_SIZE": "2", "CONTEXT_PARALLEL_SIZE": "1"}},
		{"torchtitan 1 node", "torchtitan", one8, map[string]string{
			"MAD_MULTI_NODE_RUNNER":           "torchrun --standalone --nproc_per_node=8",
			"TORCHTITAN_TENSOR_PARALLEL_SIZE": "8", "TORCHTITAN_PIPELINE_PARALLEL_SIZE": "1"}},
		{"torchtitan 2 nodes", "torchtitan", two8, map[string]string{
			"MAD_MULTI_NODE_RUNNER":           "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 --master_addr=gpu-01 --master_port=29500",
			"TORCHTITAN_TENSOR_PARALLEL_SIZE": "8", "TORCHTITAN_PIPELINE_PARALLEL_SIZE": "2",
			"TORCHTITAN_FSDP_ENABLED": "1", "TORCHTITAN_CONTEXT_PARALLEL_SIZE": "1"}},
		{"deepspeed 1 node", "deepspeed", one8, map[string]string{"MAD_MULTI_NODE_RUNNER": "deepspeed --num_gpus=8"}},
		{"deepspeed 2 nodes", "deepspeed", two8, map[string]string{
			"MAD_MULTI_NODE_RUNNER": "deepspeed --hostfile=" + OutputDir + "/deepspeed_hostfile --master_addr=gpu-01 --master_port=29500"}},
		{"vllm 1 node", "vllm", one8, map[string]string{
			"VLLM_TENSOR_PARALLEL_SIZE": "8", "VLLM_PIPELINE_PARALLEL_SIZE": "1", "VLLM_DISTRIBUTED_BACKEND": "auto"}},
		{"vllm 2 nodes: a server per node", "vllm", two8, map[string]string{
			"VLLM_TENSOR_PARALLEL_SIZE": "8", "VLLM_PIPELINE_PARALLEL_SIZE": "1", "VLLM_DISTRIBUTED_BACKEND": "none"}},
		{"sglang 1 node", "sglang", one8, map[string]string{"SGLANG_TENSOR_PARALLEL_SIZE": "8", "SGLANG_PIPELINE_PARALLEL_SIZE": "1"}},
		{"sglang 4 nodes", "sglang", four2, map[string]string{"SGLANG_TENSOR_PARALLEL_SIZE": "2", "SGLANG_PIPELINE_PARALLEL_SIZE": "1"}},
		{"sglang-disagg 4 nodes: 1 prefill, 2 decode", "sglang-disagg", four2, map[string]string{
			"SGLANG_DISAGG_MODE": "enabled", "SGLANG_DISAGG_PREFILL_NODES": "1", "SGLANG_DISAGG_DECODE_NODES": "2",
			"SGLANG_DISAGG_TOTAL_NODES": "4", "SGLANG_TP_SIZE": "2", "SGLANG_NODE_IPS": "a,b,c,d", "SGLANG_NODE_RANK": "3"}},
		{"sglang-disagg 6 nodes: 2 prefill, 3 decode", "sglang-disagg", six8, map[string]string{
			"SGLANG_DISAGG_MODE": "enabled", "SGLANG_DISAGG_PREFILL_NODES": "2", "SGLANG_DISAGG_DECODE_NODES": "3",
			"SGLANG_DISAGG_TOTAL_NODES": "6", "SGLANG_TP_SIZE": "8", "SGLANG_NODE_IPS": "a,b,c,d,e,f", "SGLANG_NODE_RANK": "2"}},
		{"sglang-disagg, the model's split", "sglang-disagg", withOpts(six8, manifest.Distributed{PrefillNodes: 4, DecodeNodes: 1}), map[string]string{
			"SGLANG_DISAGG_MODE": "enabled", "SGLANG_DISAGG_PREFILL_NODES": "4", "SGLANG_DISAGG_DECODE_NODES": "1",
			"SGLANG_DISAGG_TOTAL_NODES": "6", "SGLANG_TP_SIZE": "8", "SGLANG_NODE_IPS": "a,b,c,d,e,f", "SGLANG_NODE_RANK": "2"}},
		{"primus, backend from the model's name", "primus", primus, map[string]string{
			"PRIMUS_CONFIG_PATH": "exp_pretrain.yaml", "BACKEND": "torchtitan"}},
		{"primus, the model's settings", "primus", withOpts(primus, manifest.Distributed{PrimusConfigPath: "examples/megatron/llama.yaml",
			PrimusCLIExtra: "--train_iters 10", PrimusBackend: "megatron"}), map[string]string{
			"PRIMUS_CONFIG_PATH": "examples/megatron/llama.yaml", "PRIMUS_CLI_EXTRA": "--train_iters 10", "BACKEND": "megatron"}},
		{"primus, another name: no BACKEND", "primus", one8, map[string]string{"PRIMUS_CONFIG_PATH": "exp_pretrain.yaml"}},
	} {
		got, err := launcherEnv(c.launcher, c.ctx)
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%s:\n got %v, %v\nwant %v", c.name, got, err, c.want)
		}
	}
}

func withOpts(c launch, o manifest.Distributed) launch { c.opts = o; return c }

// A launcher that cannot run on these nodes is an invalid-input error saying why, never a
// line with holes.
func TestLauncherRefusals(t *testing.T) {
	for _, c := range []struct {
		launcher string
		ctx      launch
		want     string
	}{
		{"sglang-disagg", launch{nnodes: 2, nproc: 8, hosts: []string{"a", "b"}}, "needs at least 3 nodes"},
		{"sglang-disagg", launch{nnodes: 3, nproc: 8}, "needs their host names"},
		{"sglang-disagg", launch{nnodes: 4, nproc: 8, hosts: []string{"a", "b", "c", "d"}, opts: manifest.Distributed{PrefillNodes: 1, DecodeNodes: 1}},
			"prefill_nodes 1 + decode_nodes 1 + 1 proxy must be the job's 4 nodes"},
		{"deepspeed", launch{nnodes: 2, nproc: 8, hosts: []string{"a"}}, "needs their host names for its hostfile"},
		{"slurm_multi", launch{nnodes: 2, nproc: 8}, "slurm_multi is madengine's escape hatch"},
		{"mpirun", launch{nnodes: 2, nproc: 8}, "is not a launcher"},
	} {
		_, err := launcherEnv(c.launcher, c.ctx)
		var le *LauncherError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &le) || !le.InvalidInput() {
			t.Errorf("%s %+v: %v, want %q", c.launcher, c.ctx, err, c.want)
		}
	}
}

// A master address with spaces or shell metacharacters is a value in the container's
// environment, not a shell string: it reaches MAD_MULTI_NODE_RUNNER as written (one word of
// the line each time the script splits it), nothing is quoted, run or dropped.
func TestLauncherHostileValues(t *testing.T) {
	evil := "gpu-01; rm -rf / #$(id)`x`\n--master_port=1"
	got, err := launcherEnv("torchrun", launch{nnodes: 2, rank: 1, nproc: 8, port: 29500, addr: evil})
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
	if _, err := launcherEnv(b.Launcher, launchOf(b, n, amdNode(8))); err == nil || !strings.Contains(err.Error(), `"a b" is no host name`) {
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

// SGLANG_NODE_IPS never holds a loopback address (a node's own name is 127.0.1.1 in Debian's
// /etc/hosts, which is another machine on every node): the next address, else the name.
func TestSGLangNodeIPsLeaveLoopbackOut(t *testing.T) {
	c := launch{nnodes: 3, rank: 0, nproc: 8, port: 29500, addr: "a", hosts: []string{"a", "b", "c"},
		lookup: func(h string) ([]string, error) {
			switch h {
			case "a":
				return []string{"127.0.1.1", "10.0.0.1"}, nil
			case "b":
				return []string{"::1", "127.0.0.1"}, nil
			}
			return []string{"10.0.0.3"}, nil
		}}
	env, err := launcherEnv(manifest.LauncherSGLangDisagg, c)
	if err != nil || env["SGLANG_NODE_IPS"] != "10.0.0.1,b,10.0.0.3" {
		t.Errorf("SGLANG_NODE_IPS %q, %v", env["SGLANG_NODE_IPS"], err)
	}
}

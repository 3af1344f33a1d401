package launch

import (
	"errors"
	"maps"
	"strings"
	"testing"

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
	one8 := Context{NNodes: 1, Rank: 0, NProc: 8, Port: 29500, Addr: "gpu-01", Hosts: []string{"gpu-01"}}
	two8 := Context{NNodes: 2, Rank: 1, NProc: 8, Port: 29500, Addr: "gpu-01", Hosts: []string{"gpu-01", "gpu-02"}, Hostfile: "/out/deepspeed_hostfile"}
	four2 := Context{NNodes: 4, Rank: 3, NProc: 2, Port: 23456, Addr: "10.0.0.1", Hosts: []string{"a", "b", "c", "d"}}
	six8 := Context{NNodes: 6, Rank: 2, NProc: 8, Port: 29500, Addr: "a", Hosts: []string{"a", "b", "c", "d", "e", "f"}}
	primus := Context{NNodes: 2, Rank: 0, NProc: 8, Port: 29500, Addr: "a", Hosts: []string{"a", "b"},
		Model: "primus_pretrain/torchtitan_MI300X_qwen3_4B-pretrain"}
	for _, c := range []struct {
		name, launcher string
		ctx            Context
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
		{"megatron-lm 1 node, 16 GPUs: tensor parallel at most 8", "megatron-lm", Context{NNodes: 1, NProc: 16, Port: 1, Addr: "x"}, map[string]string{
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
			"MAD_MULTI_NODE_RUNNER": "deepspeed --hostfile=/out/deepspeed_hostfile --master_addr=gpu-01 --master_port=29500"}},
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
		got, err := Env(c.launcher, c.ctx)
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%s:\n got %v, %v\nwant %v", c.name, got, err, c.want)
		}
	}
}

// A launcher that cannot run on these nodes is an invalid-input error saying why, never a
// line with holes.
func TestLauncherRefusals(t *testing.T) {
	for _, c := range []struct {
		launcher string
		ctx      Context
		want     string
	}{
		{"sglang-disagg", Context{NNodes: 2, NProc: 8, Hosts: []string{"a", "b"}}, "needs at least 3 nodes"},
		{"sglang-disagg", Context{NNodes: 3, NProc: 8}, "needs their host names"},
		{"sglang-disagg", Context{NNodes: 4, NProc: 8, Hosts: []string{"a", "b", "c", "d"}, Opts: manifest.Distributed{PrefillNodes: 1, DecodeNodes: 1}},
			"prefill_nodes 1 + decode_nodes 1 + 1 proxy must be the job's 4 nodes"},
		{"deepspeed", Context{NNodes: 2, NProc: 8, Hosts: []string{"a"}}, "needs their host names for its hostfile"},
		{"slurm_multi", Context{NNodes: 2, NProc: 8}, "slurm_multi is madengine's escape hatch"},
		{"mpirun", Context{NNodes: 2, NProc: 8}, "mpirun on 2 nodes needs their host names"},
		{"mpiexec", Context{NNodes: 1, NProc: 8, Ranks: 1025}, "1025 ranks per node, more than 1024"},
		{"openmpi", Context{NNodes: 2, NProc: 8}, "is not a launcher"},
	} {
		_, err := Env(c.launcher, c.ctx)
		var le *Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &le) || !le.InvalidInput() {
			t.Errorf("%s %+v: %v, want %q", c.launcher, c.ctx, err, c.want)
		}
	}
}

// SGLANG_NODE_IPS never holds a loopback address (a node's own name is 127.0.1.1 in Debian's
// /etc/hosts, which is another machine on every node): the next address, else the name.
func TestSGLangNodeIPsLeaveLoopbackOut(t *testing.T) {
	c := Context{NNodes: 3, Rank: 0, NProc: 8, Port: 29500, Addr: "a", Hosts: []string{"a", "b", "c"},
		Lookup: func(h string) ([]string, error) {
			switch h {
			case "a":
				return []string{"127.0.1.1", "10.0.0.1"}, nil
			case "b":
				return []string{"::1", "127.0.0.1"}, nil
			}
			return []string{"10.0.0.3"}, nil
		}}
	env, err := Env(manifest.LauncherSGLangDisagg, c)
	if err != nil || env["SGLANG_NODE_IPS"] != "10.0.0.1,b,10.0.0.3" {
		t.Errorf("SGLANG_NODE_IPS %q, %v", env["SGLANG_NODE_IPS"], err)
	}
}

func withOpts(c Context, o manifest.Distributed) Context { c.Opts = o; return c }

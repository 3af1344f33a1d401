// Package launch builds the variables a distributed launcher gives a benchmark (torchrun,
// megatron-lm, torchtitan, deepspeed, vllm, sglang, sglang-disagg, primus), as madengine's
// Slurm deployment builds them, from a node's Context: the runner makes the context from the
// node and its GPUs, and sets the variables in the benchmark's environment.
package launch

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/scheduler"
)

// Context is the node context a launcher's variables are built from: madengine's nnodes,
// node rank, GPUs per node (nproc_per_node), master address and port, the job's hosts in
// rank order, and the model's name and distributed settings.
type Context struct {
	NNodes, Rank, NProc, Port int
	Addr                      string
	Hosts                     []string
	Model                     string
	Opts                      manifest.Distributed
	// Ranks is an MPI launcher's ranks per node (0: NProc, at least 1).
	Ranks int
	// Hostfile is where deepspeed's hostfile is, as the benchmark sees it.
	Hostfile string
	// Lookup gives a host's addresses (sglang-disagg's SGLANG_NODE_IPS); nil: the names.
	Lookup func(string) ([]string, error)
}

// Error is a launcher that cannot run on this job's nodes (exit 4).
type Error struct{ Msg string }

func (e *Error) Error() string      { return e.Msg }
func (e *Error) InvalidInput() bool { return true }

// Env returns the variables launcher name gives a container, as madengine's
// Slurm deployment builds them (deployment/slurm.py, _generate_launcher_command and the
// _generate_*_command it calls; the node rank and master address it leaves to the shell
// are this node's values here): MAD_MULTI_NODE_RUNNER for the launchers that have one,
// and each launcher's own variables. "" is torchrun. The values are a container's
// environment, never a shell string: a model's script splits MAD_MULTI_NODE_RUNNER into
// words.
func Env(name string, c Context) (map[string]string, error) {
	n, g := strconv.Itoa(c.NNodes), strconv.Itoa(c.NProc)
	torchrun := "torchrun --standalone --nproc_per_node=" + g
	if c.NNodes > 1 {
		torchrun = fmt.Sprintf("torchrun --nnodes=%d --nproc_per_node=%d --node_rank=%d --master_addr=%s --master_port=%d",
			c.NNodes, c.NProc, c.Rank, c.Addr, c.Port)
	}
	one := c.NNodes == 1
	switch name {
	case "", manifest.LauncherTorchrun:
		return map[string]string{"MAD_MULTI_NODE_RUNNER": torchrun}, nil
	case manifest.LauncherMegatronLM:
		env := map[string]string{"MAD_MULTI_NODE_RUNNER": torchrun, "CONTEXT_PARALLEL_SIZE": "1",
			"TENSOR_MODEL_PARALLEL_SIZE": g, "PIPELINE_MODEL_PARALLEL_SIZE": n}
		if one {
			env["TENSOR_MODEL_PARALLEL_SIZE"] = strconv.Itoa(min(c.NProc, 8))
		}
		return env, nil
	case manifest.LauncherTorchtitan:
		env := map[string]string{"MAD_MULTI_NODE_RUNNER": torchrun,
			"TORCHTITAN_TENSOR_PARALLEL_SIZE": g, "TORCHTITAN_PIPELINE_PARALLEL_SIZE": n}
		if !one {
			env["TORCHTITAN_FSDP_ENABLED"], env["TORCHTITAN_CONTEXT_PARALLEL_SIZE"] = "1", "1"
		}
		return env, nil
	case manifest.LauncherDeepSpeed:
		if one {
			return map[string]string{"MAD_MULTI_NODE_RUNNER": "deepspeed --num_gpus=" + g}, nil
		}
		if len(c.Hosts) != c.NNodes {
			return nil, &Error{Msg: fmt.Sprintf("deepspeed on %d nodes needs their host names for its hostfile, and this job knows %d: "+
				"run under Slurm (srun sets SLURM_JOB_NODELIST)", c.NNodes, len(c.Hosts))}
		}
		for _, h := range c.Hosts {
			if !scheduler.ValidHost(h) { // a hostfile line is "NAME slots=N": a blank or newline would make others
				return nil, &Error{Msg: fmt.Sprintf("deepspeed: the job's host %q is no host name or address, so it cannot be a hostfile line", h)}
			}
		}
		return map[string]string{"MAD_MULTI_NODE_RUNNER": fmt.Sprintf("deepspeed --hostfile=%s --master_addr=%s --master_port=%d",
			c.Hostfile, c.Addr, c.Port)}, nil
	case manifest.LauncherVLLM:
		backend := "auto"
		if !one {
			backend = "none" // one server per node: data parallel, no shared Ray cluster
		}
		return map[string]string{"VLLM_TENSOR_PARALLEL_SIZE": g, "VLLM_PIPELINE_PARALLEL_SIZE": "1", "VLLM_DISTRIBUTED_BACKEND": backend}, nil
	case manifest.LauncherSGLang:
		return map[string]string{"SGLANG_TENSOR_PARALLEL_SIZE": g, "SGLANG_PIPELINE_PARALLEL_SIZE": "1"}, nil
	case manifest.LauncherSGLangDisagg:
		return sglangDisagg(c)
	case manifest.LauncherMPIRun, manifest.LauncherMPIExec:
		// Rank 0 runs the launcher's line (MPILine), which sets no MAD variables; made here
		// too, so that a line that cannot be made is refused before the job starts.
		if _, err := MPILine(name, c, c.Ranks, "benchctl-agent", true, nil); err != nil {
			return nil, err
		}
		return map[string]string{}, nil
	case manifest.LauncherPrimus:
		env := map[string]string{"PRIMUS_CONFIG_PATH": "exp_pretrain.yaml"}
		if c.Opts.PrimusConfigPath != "" {
			env["PRIMUS_CONFIG_PATH"] = c.Opts.PrimusConfigPath
		}
		if strings.TrimSpace(c.Opts.PrimusCLIExtra) != "" {
			env["PRIMUS_CLI_EXTRA"] = c.Opts.PrimusCLIExtra
		}
		if b := strings.TrimSpace(c.Opts.PrimusBackend); b != "" {
			env["BACKEND"] = b
		} else if b := primusBackend(c.Model); b != "" {
			env["BACKEND"] = b
		}
		return env, nil
	}
	return nil, &Error{Msg: manifest.LauncherProblem(name)}
}

// sglangDisagg is sglang-disagg's topology: node 0 the proxy, then the prefill nodes,
// then the decode nodes (madengine's default split: about 2 of 5 workers prefill).
func sglangDisagg(c Context) (map[string]string, error) {
	if c.NNodes < 3 {
		return nil, &Error{Msg: fmt.Sprintf("sglang-disagg needs at least 3 nodes (a proxy, a prefill and a decode node), this job has %d", c.NNodes)}
	}
	prefill := max(1, (c.NNodes-1)*2/5)
	decode := c.NNodes - 1 - prefill
	if c.Opts.PrefillNodes > 0 || c.Opts.DecodeNodes > 0 {
		prefill, decode = c.Opts.PrefillNodes, c.Opts.DecodeNodes
		if prefill < 1 || decode < 1 || prefill+decode+1 != c.NNodes {
			return nil, &Error{Msg: fmt.Sprintf("sglang-disagg: prefill_nodes %d + decode_nodes %d + 1 proxy must be the job's %d nodes, each at least 1",
				prefill, decode, c.NNodes)}
		}
	}
	if len(c.Hosts) != c.NNodes {
		return nil, &Error{Msg: fmt.Sprintf("sglang-disagg on %d nodes needs their host names (SGLANG_NODE_IPS), and this job knows %d: "+
			"run under Slurm (srun sets SLURM_JOB_NODELIST)", c.NNodes, len(c.Hosts))}
	}
	ips := make([]string, len(c.Hosts))
	for i, h := range c.Hosts {
		ips[i] = h
		if c.Lookup != nil {
			// A node's own name resolves to 127.0.1.1 in Debian's /etc/hosts: a loopback
			// address means another machine on each node, so the name stands instead.
			if a, err := c.Lookup(h); err == nil {
				for _, ip := range a {
					if p := net.ParseIP(ip); p != nil && !p.IsLoopback() {
						ips[i] = ip
						break
					}
				}
			}
		}
	}
	return map[string]string{"SGLANG_DISAGG_MODE": "enabled", "SGLANG_DISAGG_PREFILL_NODES": strconv.Itoa(prefill),
		"SGLANG_DISAGG_DECODE_NODES": strconv.Itoa(decode), "SGLANG_DISAGG_TOTAL_NODES": strconv.Itoa(c.NNodes),
		"SGLANG_TP_SIZE": strconv.Itoa(c.NProc), "SGLANG_NODE_IPS": strings.Join(ips, ","),
		"SGLANG_NODE_RANK": strconv.Itoa(c.Rank)}, nil
}

// primusBackend is Primus's BACKEND for a model named primus_pretrain/<launcher>_..., as
// madengine infers it (deployment/primus_backend.py); "" for any other name.
func primusBackend(model string) string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(model), "primus_pretrain/")
	if !ok || strings.TrimSpace(rest) == "" {
		return ""
	}
	token, _, _ := strings.Cut(strings.TrimSpace(rest), "_")
	switch t := strings.ToLower(token); t {
	case "maxtext":
		return "MaxText"
	case "torchtitan", "megatron", "megatron_bridge", "moe_package":
		return t
	}
	return ""
}

// LookupHost resolves a host for SGLANG_NODE_IPS, bounded: a name that does not resolve
// in 2 seconds stays a name.
func LookupHost(h string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return net.DefaultResolver.LookupHost(ctx, h)
}

package runner

import (
	"context"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// launch is the node context a launcher's variables are built from: madengine's nnodes,
// node rank, GPUs per node (nproc_per_node), master address and port, the job's hosts in
// rank order, and the model's name and distributed settings.
type launch struct {
	nnodes, rank, nproc, port int
	addr                      string
	hosts                     []string
	model                     string
	opts                      manifest.Distributed
	// lookup gives a host's addresses (sglang-disagg's SGLANG_NODE_IPS); nil: the names.
	lookup func(string) ([]string, error)
}

// DeepSpeedHostfile is where a deepspeed job of several nodes finds its hostfile in the
// container: the benchmark's output folder, which benchctl writes it to before the
// container starts (deepSpeedHostfile).
const DeepSpeedHostfile = OutputDir + "/deepspeed_hostfile"

// LauncherError is a launcher that cannot run on this job's nodes (exit 4).
type LauncherError struct{ Msg string }

func (e *LauncherError) Error() string      { return e.Msg }
func (e *LauncherError) InvalidInput() bool { return true }

// launcherEnv returns the variables launcher name gives a container, as madengine's
// Slurm deployment builds them (deployment/slurm.py, _generate_launcher_command and the
// _generate_*_command it calls; the node rank and master address it leaves to the shell
// are this node's values here): MAD_MULTI_NODE_RUNNER for the launchers that have one,
// and each launcher's own variables. "" is torchrun. The values are a container's
// environment, never a shell string: a model's script splits MAD_MULTI_NODE_RUNNER into
// words.
func launcherEnv(name string, c launch) (map[string]string, error) {
	n, g := strconv.Itoa(c.nnodes), strconv.Itoa(c.nproc)
	torchrun := "torchrun --standalone --nproc_per_node=" + g
	if c.nnodes > 1 {
		torchrun = fmt.Sprintf("torchrun --nnodes=%d --nproc_per_node=%d --node_rank=%d --master_addr=%s --master_port=%d",
			c.nnodes, c.nproc, c.rank, c.addr, c.port)
	}
	one := c.nnodes == 1
	switch name {
	case "", manifest.LauncherTorchrun:
		return map[string]string{"MAD_MULTI_NODE_RUNNER": torchrun}, nil
	case manifest.LauncherMegatronLM:
		env := map[string]string{"MAD_MULTI_NODE_RUNNER": torchrun, "CONTEXT_PARALLEL_SIZE": "1",
			"TENSOR_MODEL_PARALLEL_SIZE": g, "PIPELINE_MODEL_PARALLEL_SIZE": n}
		if one {
			env["TENSOR_MODEL_PARALLEL_SIZE"] = strconv.Itoa(min(c.nproc, 8))
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
		if len(c.hosts) != c.nnodes {
			return nil, &LauncherError{Msg: fmt.Sprintf("deepspeed on %d nodes needs their host names for its hostfile, and this job knows %d: "+
				"run under Slurm (srun sets SLURM_JOB_NODELIST)", c.nnodes, len(c.hosts))}
		}
		for _, h := range c.hosts {
			if !validHost(h) { // a hostfile line is "NAME slots=N": a blank or newline would make others
				return nil, &LauncherError{Msg: fmt.Sprintf("deepspeed: the job's host %q is no host name or address, so it cannot be a hostfile line", h)}
			}
		}
		return map[string]string{"MAD_MULTI_NODE_RUNNER": fmt.Sprintf("deepspeed --hostfile=%s --master_addr=%s --master_port=%d",
			DeepSpeedHostfile, c.addr, c.port)}, nil
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
	case manifest.LauncherPrimus:
		env := map[string]string{"PRIMUS_CONFIG_PATH": "exp_pretrain.yaml"}
		if c.opts.PrimusConfigPath != "" {
			env["PRIMUS_CONFIG_PATH"] = c.opts.PrimusConfigPath
		}
		if strings.TrimSpace(c.opts.PrimusCLIExtra) != "" {
			env["PRIMUS_CLI_EXTRA"] = c.opts.PrimusCLIExtra
		}
		if b := strings.TrimSpace(c.opts.PrimusBackend); b != "" {
			env["BACKEND"] = b
		} else if b := primusBackend(c.model); b != "" {
			env["BACKEND"] = b
		}
		return env, nil
	}
	return nil, &LauncherError{Msg: manifest.LauncherProblem(name)}
}

// sglangDisagg is sglang-disagg's topology: node 0 the proxy, then the prefill nodes,
// then the decode nodes (madengine's default split: about 2 of 5 workers prefill).
func sglangDisagg(c launch) (map[string]string, error) {
	if c.nnodes < 3 {
		return nil, &LauncherError{Msg: fmt.Sprintf("sglang-disagg needs at least 3 nodes (a proxy, a prefill and a decode node), this job has %d", c.nnodes)}
	}
	prefill := max(1, (c.nnodes-1)*2/5)
	decode := c.nnodes - 1 - prefill
	if c.opts.PrefillNodes > 0 || c.opts.DecodeNodes > 0 {
		prefill, decode = c.opts.PrefillNodes, c.opts.DecodeNodes
		if prefill < 1 || decode < 1 || prefill+decode+1 != c.nnodes {
			return nil, &LauncherError{Msg: fmt.Sprintf("sglang-disagg: prefill_nodes %d + decode_nodes %d + 1 proxy must be the job's %d nodes, each at least 1",
				prefill, decode, c.nnodes)}
		}
	}
	if len(c.hosts) != c.nnodes {
		return nil, &LauncherError{Msg: fmt.Sprintf("sglang-disagg on %d nodes needs their host names (SGLANG_NODE_IPS), and this job knows %d: "+
			"run under Slurm (srun sets SLURM_JOB_NODELIST)", c.nnodes, len(c.hosts))}
	}
	ips := make([]string, len(c.hosts))
	for i, h := range c.hosts {
		ips[i] = h
		if c.lookup != nil {
			// A node's own name resolves to 127.0.1.1 in Debian's /etc/hosts: a loopback
			// address means another machine on each node, so the name stands instead.
			if a, err := c.lookup(h); err == nil {
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
		"SGLANG_DISAGG_DECODE_NODES": strconv.Itoa(decode), "SGLANG_DISAGG_TOTAL_NODES": strconv.Itoa(c.nnodes),
		"SGLANG_TP_SIZE": strconv.Itoa(c.nproc), "SGLANG_NODE_IPS": strings.Join(ips, ","),
		"SGLANG_NODE_RANK": strconv.Itoa(c.rank)}, nil
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

// lookupHost resolves a host for SGLANG_NODE_IPS, bounded: a name that does not resolve
// in 2 seconds stays a name.
func lookupHost(h string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return net.DefaultResolver.LookupHost(ctx, h)
}

// launchOf is the launch context of benchmark b on node n with acc's GPUs.
func launchOf(b manifest.Benchmark, n Node, acc GPUAccess) launch {
	c := launch{nnodes: max(n.World, 1), rank: n.Rank, nproc: max(len(acc.GPUs), 1), port: n.MasterPort,
		addr: n.MasterAddr, model: b.Name}
	if n.Source == "slurm" { // elsewhere only the master's and this node's names are known
		c.hosts = n.Hosts
	}
	if b.Model != nil && b.Model.Distributed != nil {
		c.opts = *b.Model.Distributed
	}
	return c
}

// checkLauncher says why benchmark b's launcher cannot run on node n's job with acc's
// GPUs, or on a variant's fewer nodes; nil when it can.
func checkLauncher(b manifest.Benchmark, n Node, acc GPUAccess, x *manifest.Experiment) error {
	worlds := []int{n.World}
	if x != nil {
		for _, v := range x.Variants {
			if v.Nodes > 0 && v.Nodes < n.World {
				worlds = append(worlds, v.Nodes)
			}
		}
	}
	for _, w := range worlds {
		if _, err := launcherEnv(b.Launcher, launchOf(b, variantNode(n, w), acc)); err != nil {
			return &LauncherError{Msg: fmt.Sprintf("benchmark %s: %v", b.Name, err)}
		}
	}
	return nil
}

// deepSpeedHostfile is the hostfile of a deepspeed benchmark of several nodes (one line
// per host: "NAME slots=GPUS", as madengine writes it), or nil for any other benchmark.
func deepSpeedHostfile(b manifest.Benchmark, n Node, acc GPUAccess) []byte {
	c := launchOf(b, n, acc)
	if b.Launcher != manifest.LauncherDeepSpeed || c.nnodes < 2 || len(c.hosts) != c.nnodes {
		return nil
	}
	var out strings.Builder
	for _, h := range c.hosts {
		fmt.Fprintf(&out, "%s slots=%d\n", h, c.nproc)
	}
	return []byte(out.String())
}

// writeDeepSpeedHostfile writes a deepspeed hostfile into the results folder of run name
// (mounted at OutputDir), never through a link a co-writer planted.
func writeDeepSpeedHostfile(nf *jobdir.NodeFolder, name string, data []byte) error {
	root, err := nf.MkdirAll(jobdir.ResultsFolder, 0o755)
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := safefile.OpenDirAt(root, name)
	if err != nil {
		return err
	}
	defer d.Close()
	return atomicfile.WriteFileAt(d, path.Base(DeepSpeedHostfile), data, 0o644)
}

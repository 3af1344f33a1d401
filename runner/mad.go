package runner

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/launch"
)

// madEnv is what a madengine run script expects in its container, with madengine's names
// and meanings: the model, the GPU vendor, how many GPUs the model runs on and the node
// has, the node's GPU architecture and product name (from this node's inventory), the
// benchmark's launcher (MAD_LAUNCHER_TYPE) and its MAD_MULTI_NODE_RUNNER for the node
// context (also for one node), and how the job was deployed (MAD_DEPLOYMENT_TYPE: local or
// slurm, as perf.csv's deployment_type). A model leaves its CSV where madengine finds it
// (workspace.KeepResults), so no variable says where to write it. defaults are the launcher's own
// variables (parallel sizes, topology), which the benchmark's env may set otherwise.
func madEnv(b manifest.Benchmark, n Node, acc GPUAccess) (env, defaults map[string]string) {
	vendor := ""
	switch acc.Vendor {
	case gpu.VendorAMD:
		vendor = "AMD"
	case gpu.VendorNVIDIA:
		vendor = "NVIDIA"
	}
	arch, product := "", ""
	if len(acc.System) > 0 {
		arch, product = acc.System[0].Arch, acc.System[0].Name
	}
	env = map[string]string{
		"MAD_MODEL_NAME":              b.Name,
		"MAD_GPU_VENDOR":              vendor,
		"MAD_RUNTIME_NGPUS":           strconv.Itoa(len(acc.GPUs)),
		"MAD_SYSTEM_NGPUS":            strconv.Itoa(len(acc.System)),
		"MAD_SYSTEM_GPU_ARCHITECTURE": arch,
		"MAD_SYSTEM_GPU_PRODUCT_NAME": product,
		"MAD_LAUNCHER_TYPE":           cmp.Or(b.Launcher, manifest.LauncherTorchrun),
		"MAD_DEPLOYMENT_TYPE":         deploymentType(n),
	}
	madVars(env, b, acc)
	c := launchOf(b, n, acc)
	c.Lookup = launch.LookupHost
	// checkLaunchers has refused a launcher that cannot run on these nodes before any
	// container is built.
	defaults, _ = launch.Env(b.Launcher, c)
	if r, ok := defaults["MAD_MULTI_NODE_RUNNER"]; ok {
		env["MAD_MULTI_NODE_RUNNER"] = r
		delete(defaults, "MAD_MULTI_NODE_RUNNER")
	}
	return env, defaults
}

// deploymentType is madengine's MAD_DEPLOYMENT_TYPE for the node context: slurm for a
// Slurm job, kubernetes for a Kubernetes job's pods, local otherwise (jobdir.Job.Deployment,
// perf.csv's deployment_type, agrees).
func deploymentType(n Node) string {
	if n.Source == jobdir.SourceSlurm || n.Source == jobdir.SourceKubernetes {
		return n.Source
	}
	return "local"
}

// modelGPUs is the GPU access of one benchmark: the job's, or the first n_gpus of them
// for a MAD model ("-1", empty or "all": all of the job's).
func modelGPUs(b manifest.Benchmark, acc GPUAccess) (GPUAccess, error) {
	if b.Model == nil {
		return acc, nil
	}
	v := strings.TrimSpace(b.Model.NGPUs)
	switch strings.ToLower(v) {
	case "", "-1", "all":
		return acc, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return acc, &GPUError{Msg: fmt.Sprintf("benchmark %s: n_gpus %q is not a number of GPUs (a whole number ≥ 1, or -1 for all)", b.Name, v)}
	}
	return acc.Take(n, "benchmark "+b.Name)
}

// skipArch says why a MAD model is skipped on this node (its skip_gpu_arch names this
// node's GPU architecture), or "". An entry matches the architecture (gfx90a, sm_90) or
// the start of the product name without its vendor word (A100 matches "NVIDIA A100-SXM4-80GB",
// MI300X matches "AMD Instinct MI300X" after "AMD Instinct "), case-insensitively.
func skipArch(b manifest.Benchmark, acc GPUAccess) string {
	if b.Model == nil || len(b.Model.SkipGPUArch) == 0 || len(acc.System) == 0 {
		return ""
	}
	g := acc.System[0]
	product := strings.ToLower(g.Name)
	for _, prefix := range []string{"nvidia ", "amd instinct ", "amd radeon ", "amd "} {
		product = strings.TrimPrefix(product, prefix)
	}
	for _, s := range b.Model.SkipGPUArch {
		e := strings.ToLower(strings.TrimSpace(s))
		if e == "" {
			continue
		}
		if e == strings.ToLower(g.Arch) || strings.HasPrefix(product, e) {
			return fmt.Sprintf("%s: skip_gpu_arch %s matches this node's GPUs (%s, %s)", jobdir.SkipArchPrefix, s, g.Arch, g.Name)
		}
	}
	return ""
}

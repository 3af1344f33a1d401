package runner

import (
	"path"
	"sort"
	"strings"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/manifest"
)

// The rest of madengine's container variables (its core/context.py and
// execution/container_runner.py): MAD_MODEL_NAME is the model's catalog name (<dir>/<name>
// for a scripts/<dir> model), MAD_SYSTEM_HIP_VERSION the node's ROCm (AMD) or CUDA (NVIDIA)
// version as major.minor, MAD_GUEST_OS the guest OS of the model's image, and for a model
// with data MAD_DATANAME (its data key) and MAD_DATAHOME (where each data set is mounted,
// comma-separated as madengine joins them). MAD_SECRETS* host variables reach every MAD
// model's container as secrets (madengine passes every host variable whose name holds
// MAD_SECRETS, to its build args too: benchctl never puts a secret in a build arg).

// madSecretsWord is what a host variable's name holds to reach MAD models as a secret.
const madSecretsWord = "MAD_SECRETS"

// madVars adds those variables to a MAD model's env (madEnv).
func madVars(env map[string]string, b manifest.Benchmark, acc GPUAccess) {
	env["MAD_SYSTEM_HIP_VERSION"] = hipVersion(acc)
	if b.Model == nil {
		return
	}
	if b.Model.Name != "" {
		env["MAD_MODEL_NAME"] = b.Model.Name
	}
	env["MAD_GUEST_OS"] = b.Model.GuestOS
	if len(b.Model.DataSets) > 0 {
		var homes []string
		for _, d := range b.Model.DataSets {
			if d.Home != "" { // a data name without a provider is not mounted
				homes = append(homes, d.Home)
			}
		}
		if len(homes) > 0 {
			env["MAD_DATAHOME"] = strings.Join(homes, ",")
		}
		env["MAD_DATANAME"] = b.Model.Data
	}
}

// hipVersion is the node's GPU runtime version as major.minor ("6.2.0" -> "6.2"), as
// madengine's get_system_hip_version gives it; "" when the inventory does not know it
// (hipVersionNote says why).
func hipVersion(acc GPUAccess) string {
	parts := strings.SplitN(acc.Runtime, ".", 3)
	if len(parts) < 2 {
		return acc.Runtime
	}
	return parts[0] + "." + parts[1]
}

// hipVersionNote says why MAD_SYSTEM_HIP_VERSION is empty for the job's MAD models, or "".
func hipVersionNote(m *manifest.Manifest, acc GPUAccess) string {
	if acc.Runtime != "" || m == nil {
		return ""
	}
	for _, b := range m.Benchmarks {
		if b.Model != nil {
			what := "the node's GPU inventory does not know its ROCm or CUDA version"
			if acc.Vendor == manifest.VendorNone || acc.Vendor == gpu.VendorNone || acc.Vendor == "" {
				what = "the job runs without GPUs"
			}
			return "MAD_SYSTEM_HIP_VERSION is empty in the MAD models' containers: " + what
		}
	}
	return ""
}

// madDataMounts adds a MAD model's data sets to its mounts: each at its home, read-only
// unless data.json says readwrite. A home the mounts already have is left to them, as
// madengine leaves a data path its run options mount.
func madDataMounts(b manifest.Benchmark, mounts []manifest.Mount) []manifest.Mount {
	if b.Model == nil || len(b.Model.DataSets) == 0 {
		return mounts
	}
	out := append([]manifest.Mount{}, mounts...)
	for _, d := range b.Model.DataSets {
		if d.Source == "" || d.Home == "" { // a data name without a provider: not mounted
			continue
		}
		taken := false
		for _, m := range out {
			taken = taken || path.Clean(m.Target) == d.Home
		}
		if !taken {
			out = append(out, manifest.Mount{Source: d.Source, Target: d.Home, ReadOnly: !d.ReadWrite})
		}
	}
	return out
}

// madSecrets are the host's MAD_SECRETS variables, as secrets, for a MAD model; none for
// another benchmark.
func madSecrets(b manifest.Benchmark, host map[string]string) []manifest.EnvVar {
	if b.Model == nil {
		return nil
	}
	var out []manifest.EnvVar
	for k, v := range host {
		if strings.Contains(k, madSecretsWord) && !strings.HasPrefix(k, "BENCHCTL_") {
			out = append(out, manifest.EnvVar{Name: k, Value: v, Secret: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

package manifest

import (
	"fmt"
	"strings"

	"github.com/benchctl/benchctl/manifest/document"
)

// The distributed launchers, with madengine's names (its deployment/common.py,
// VALID_LAUNCHERS). A benchmark's launcher decides the MAD_MULTI_NODE_RUNNER line and the
// variables its container gets (runner/launcher.go); "" is torchrun.
const (
	LauncherTorchrun     = "torchrun"
	LauncherTorchtitan   = "torchtitan"
	LauncherDeepSpeed    = "deepspeed"
	LauncherMegatronLM   = "megatron-lm"
	LauncherPrimus       = "primus"
	LauncherVLLM         = "vllm"
	LauncherSGLang       = "sglang"
	LauncherSGLangDisagg = "sglang-disagg"
	LauncherSlurmMulti   = "slurm_multi"
	// The MPI launchers: rank 0 runs the MPI's launcher with the job's hosts and slots,
	// the other nodes wait for the ranks it starts through benchctl's agent (no sshd).
	LauncherMPIRun  = "mpirun"  // Open MPI
	LauncherMPIExec = "mpiexec" // MPICH's or Intel MPI's hydra
)

// MaxRanksPerNode bounds ranksPerNode.
const MaxRanksPerNode = 1024

// MPILauncher reports whether launcher name is an MPI launcher (mpirun, mpiexec).
func MPILauncher(name string) bool { return name == LauncherMPIRun || name == LauncherMPIExec }

// Launchers lists every launcher name benchctl accepts, in madengine's order, then the MPI ones.
func Launchers() []string {
	return []string{LauncherTorchrun, LauncherTorchtitan, LauncherDeepSpeed, LauncherMegatronLM, LauncherPrimus,
		LauncherVLLM, LauncherSGLang, LauncherSGLangDisagg, LauncherSlurmMulti, LauncherMPIRun, LauncherMPIExec}
}

// launcherAliases are the other spellings madengine accepts (named ones only: a
// hyphen/underscore rewrite of every name would accept spellings madengine refuses).
var launcherAliases = map[string]string{"slurm-multi": LauncherSlurmMulti, "sglang_disagg": LauncherSGLangDisagg}

// CanonicalLauncher returns the launcher s names, in its canonical spelling; madengine's
// aliases (slurm-multi, sglang_disagg) are accepted. "" is "" and ok: no launcher named.
// The spelling is exact: a MAD catalog's value is lower-cased and trimmed first, as
// madengine reads it.
func CanonicalLauncher(s string) (string, bool) {
	v := s
	if v == "" {
		return "", true
	}
	if a, ok := launcherAliases[v]; ok {
		v = a
	}
	for _, l := range Launchers() {
		if v == l {
			return v, true
		}
	}
	return "", false
}

// LauncherProblem says what is wrong with launcher name s, or "" when it is a launcher
// benchctl can run: an unknown name lists the allowed ones; slurm_multi, a known name,
// is refused because madengine runs it as the model's own sbatch script on the login
// node, outside any container of benchctl's.
func LauncherProblem(s string) string {
	v, ok := CanonicalLauncher(s)
	switch {
	case !ok:
		hint := ""
		switch s {
		case "docker", "native":
			hint = " (madengine writes it in perf.csv for a run without a launcher: leave launcher out instead)"
		case "megatron":
			hint = " (did you mean megatron-lm?)"
		}
		return fmt.Sprintf("%s is not a launcher%s; allowed: %s", document.Clip(document.Quote(s)), hint, strings.Join(Launchers(), ", "))
	case v == LauncherSlurmMulti:
		return "slurm_multi is madengine's escape hatch that submits the model's own .slurm script with sbatch and " +
			"starts its containers itself; benchctl runs one container per node and cannot: use torchrun (or another " +
			"launcher) and `benchctl submit --nodes N`, or run the .slurm script with sbatch yourself"
	}
	return ""
}

// Distributed holds a MAD model's distributed settings beyond its launcher (madengine's
// distributed.sglang_disagg and distributed.primus), for the launchers that read them.
type Distributed struct {
	// PrefillNodes and DecodeNodes split an sglang-disagg job (both 0: madengine's default
	// split of about 2:3 after the proxy node).
	PrefillNodes int `json:"prefillNodes,omitempty" yaml:"prefillNodes,omitempty"`
	DecodeNodes  int `json:"decodeNodes,omitempty" yaml:"decodeNodes,omitempty"`
	// PrimusConfigPath, PrimusCLIExtra and PrimusBackend are distributed.primus's
	// config_path, cli_extra and backend.
	PrimusConfigPath string `json:"primusConfigPath,omitempty" yaml:"primusConfigPath,omitempty"`
	PrimusCLIExtra   string `json:"primusCLIExtra,omitempty" yaml:"primusCLIExtra,omitempty"`
	PrimusBackend    string `json:"primusBackend,omitempty" yaml:"primusBackend,omitempty"`
}

// launcherEnum is what the schema allows for a launcher: the names validate accepts.
func launcherEnum() []any {
	var out []any
	for _, l := range Launchers() {
		if l != LauncherSlurmMulti {
			out = append(out, l)
		}
	}
	return append(out, "sglang_disagg")
}

// launcher checks the manifest's launcher, the default of its benchmarks.
func (r *resolver) launcher(s string) string {
	if msg := LauncherProblem(s); msg != "" {
		r.p.Add("launcher", "%s", msg)
		return ""
	}
	v, _ := CanonicalLauncher(s)
	return v
}

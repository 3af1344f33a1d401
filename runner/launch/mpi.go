package launch

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/scheduler"
)

// MPI is what rank 0 runs for an MPI launcher (mpirun: Open MPI; mpiexec: MPICH's or
// Intel MPI's hydra): Argv, the launcher's line with the job's hosts and slots before the
// benchmark's own command, run through the agent's launch mode (which finds the MPI's
// program the image has: mpirun.openmpi or mpirun, mpiexec.hydra, mpiexec.mpich or
// mpiexec); and Env, the launcher's environment (its remote-launch hook: the agent, no
// sshd). The benchmark's env wins over Env: a user may set any of these variables.
type MPI struct {
	Argv []string
	Env  map[string]string
	// Ranks is the job's MPI world: nodes × ranks per node.
	Ranks int
}

// MaxRanksPerNode bounds ranksPerNode (more than any node has cores for).
const MaxRanksPerNode = manifest.MaxRanksPerNode

// MPILine is launcher name's line for command on c's nodes, each with ranks ranks (0: the
// node's GPUs, at least 1), with agent the agent's path where the launcher runs and
// container true when it runs in a container.
func MPILine(name string, c Context, ranks int, agent string, container bool, command []string) (MPI, error) {
	if ranks <= 0 {
		ranks = max(c.NProc, 1)
	}
	if ranks > MaxRanksPerNode {
		return MPI{}, &Error{Msg: fmt.Sprintf("%s: %d ranks per node, more than %d", name, ranks, MaxRanksPerNode)}
	}
	hosts := c.Hosts
	if c.NNodes == 1 && len(hosts) != 1 {
		hosts = []string{"localhost"}
	}
	if len(hosts) != c.NNodes {
		return MPI{}, &Error{Msg: fmt.Sprintf("%s on %d nodes needs their host names for its host list, and this job knows %d: "+
			"run under Slurm (srun sets SLURM_JOB_NODELIST)", name, c.NNodes, len(hosts))}
	}
	for _, h := range hosts {
		if !scheduler.ValidHost(h) || strings.ContainsAny(h, ",:") {
			return MPI{}, &Error{Msg: fmt.Sprintf("%s: the job's host %q is no host name or address, so it cannot be in the launcher's host list", name, h)}
		}
	}
	world := c.NNodes * ranks
	env := map[string]string{}
	var args []string
	switch name {
	case manifest.LauncherMPIRun:
		slots := make([]string, len(hosts))
		for i, h := range hosts {
			slots[i] = h + ":" + strconv.Itoa(ranks)
		}
		args = []string{"-H", strings.Join(slots, ","), "-np", strconv.Itoa(world)}
		// Open MPI 4 (ORTE): the agent starts every node's daemon from rank 0 (no tree
		// spawn: only rank 0's benchmark reaches the agent's socket) and stays attached
		// for as long as the daemon runs, carrying its exit; Open MPI 5 (PRRTE) names.
		hook := agent
		if !container {
			// Every node's daemon checks the hook is there; a process's agent is in a
			// folder of rank 0's node only, so the others find the list's second.
			hook = agent + " : /bin/false"
		}
		for k, v := range map[string]string{
			"OMPI_MCA_plm_rsh_agent": hook, "OMPI_MCA_plm_rsh_no_tree_spawn": "1", "OMPI_MCA_orte_leave_session_attached": "1",
			"PRTE_MCA_plm_ssh_agent": hook, "PRTE_MCA_plm_ssh_no_tree_spawn": "1", "PRTE_MCA_prte_leave_session_attached": "1",
			"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
			// Inside a batch job's task Open MPI would launch with the batch system's own
			// means (srun) and read its allocation (one slot a node): the host list and the
			// agent decide instead.
			"OMPI_MCA_plm": "rsh", "OMPI_MCA_ras": "^slurm,tm,lsf,gridengine,alps", "PRTE_MCA_plm": "ssh", "PRTE_MCA_ras": "^slurm",
		} {
			env[k] = v
		}
		if container {
			// A container's default seccomp profile refuses the cross-memory attach of
			// shared-memory single copies (process_vm_readv: EPERM on every message).
			env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
			env["OMPI_MCA_btl_sm_single_copy_mechanism"] = "none"
		}
	case manifest.LauncherMPIExec:
		args = []string{"-launcher", "ssh", "-launcher-exec", agent, "-hosts", strings.Join(hosts, ","), "-ppn", strconv.Itoa(ranks), "-n", strconv.Itoa(world)}
		env["I_MPI_HYDRA_BOOTSTRAP"], env["I_MPI_HYDRA_BOOTSTRAP_EXEC"] = "ssh", agent
		// The host list, not a batch system's (hydra reads Slurm's nodes in a job's task).
		env["HYDRA_RMK"], env["I_MPI_HYDRA_RMK"] = "user", "user"
	default:
		return MPI{}, &Error{Msg: fmt.Sprintf("%q is not an MPI launcher (mpirun, mpiexec)", name)}
	}
	argv := append([]string{agent, "launch", name, "--"}, args...)
	return MPI{Argv: append(argv, command...), Env: env, Ranks: world}, nil
}

// CheckRanks says why b's ranksPerNode cannot run on node host, which gives it gpus
// GPUs: more ranks than those, or, without GPUs, than its CPUs.
func CheckRanks(b manifest.Benchmark, host string, gpus int) error {
	if !manifest.MPILauncher(b.Launcher) || b.RanksPerNode == 0 {
		return nil
	}
	have, what := gpus, "GPUs"
	if have == 0 {
		have, what = runtime.NumCPU(), "CPUs"
	}
	if b.RanksPerNode > have {
		return &Error{Msg: fmt.Sprintf("benchmark %s: ranksPerNode %d is more than the %d %s node %s gives it: lower it, or leave it out (one rank per GPU)",
			b.Name, b.RanksPerNode, have, what, host)}
	}
	return nil
}

// What the MPI launchers print when a rank dies (Open MPI 4's mpirun, hydra's mpiexec).
var (
	ompiSignal = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?`)
	})
	ompiExit = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)Process name: *\[\[\d+,\d+\],(\d+)\].{0,80}?Exit code: *(\d+)`)
	})
	ompiLost = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)lost communication with a remote daemon.{0,200}?Remote daemon: *\S+ on node (\S+)`)
	})
	hydraBad = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES.{0,40}?PID (\d+) RUNNING AT (\S+).{0,40}?EXIT CODE: *(\d+)`)
	})
)

// DeadRank names the rank an MPI launcher's log says ended the job ("" when it says none):
// the end of the log, where the launcher reports it.
func DeadRank(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		_, _ = f.Seek(-tail, io.SeekEnd)
	}
	b, _ := io.ReadAll(io.LimitReader(f, tail))
	text := string(b)
	if m := ompiSignal().FindStringSubmatch(text); m != nil {
		s := fmt.Sprintf("MPI rank %s on node %s was killed by signal %s", m[1], m[2], m[3])
		if m[4] != "" {
			s += " (" + m[4] + ")"
		}
		return s
	}
	if m := hydraBad().FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("an MPI rank (PID %s) on node %s ended with exit code %s", m[1], m[2], m[3])
	}
	if m := ompiExit().FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("MPI rank %s exited with code %s", m[1], m[2])
	}
	if m := ompiLost().FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("the launcher lost its daemon on node %s (that node's ranks are gone)", m[1])
	}
	return ""
}

// WithEnv is env with add's variables that env does not set (the benchmark's own setting
// wins), the secret ones marked so, sorted by name.
func WithEnv(env []manifest.EnvVar, add map[string]string, secret ...string) []manifest.EnvVar {
	out := slices.Clone(env)
	for k, v := range add {
		if !slices.ContainsFunc(env, func(e manifest.EnvVar) bool { return e.Name == k }) {
			out = append(out, manifest.EnvVar{Name: k, Value: v, Secret: slices.Contains(secret, k)})
		}
	}
	slices.SortFunc(out, func(a, b manifest.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

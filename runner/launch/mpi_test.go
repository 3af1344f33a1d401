package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// Open MPI's line: every node with its slots, the world, the agent as the remote-launch
// hook (Open MPI 4's and 5's names), no tree spawn, attached daemons; in a container, no
// cross-memory attach. The benchmark's command follows the launcher's arguments.
func TestMPILineOpenMPI(t *testing.T) {
	c := Context{NNodes: 3, NProc: 8, Hosts: []string{"n1", "n2", "n3"}}
	m, err := MPILine(manifest.LauncherMPIRun, c, 2, "/run/benchctl-agent/benchctl-agent", true, []string{"python3", "/usr/local/bin/pingpong.py", "--size", "8"})
	if err != nil {
		t.Fatal(err)
	}
	want := "/run/benchctl-agent/benchctl-agent launch mpirun -- -H n1:2,n2:2,n3:2 -np 6 python3 /usr/local/bin/pingpong.py --size 8"
	if got := strings.Join(m.Argv, " "); got != want || m.Ranks != 6 {
		t.Errorf("argv\n got %s\nwant %s (ranks %d)", got, want, m.Ranks)
	}
	for k, v := range map[string]string{"OMPI_MCA_plm_rsh_agent": "/run/benchctl-agent/benchctl-agent", "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
		"OMPI_MCA_orte_leave_session_attached": "1", "PRTE_MCA_plm_ssh_agent": "/run/benchctl-agent/benchctl-agent",
		"OMPI_MCA_btl_vader_single_copy_mechanism": "none", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
		"OMPI_MCA_plm": "rsh", "OMPI_MCA_ras": "^slurm,tm,lsf,gridengine,alps"} {
		if m.Env[k] != v {
			t.Errorf("%s=%q, want %q", k, m.Env[k], v)
		}
	}
	// As processes: the agent's host path, and cross-memory attach left to Open MPI.
	m, err = MPILine(manifest.LauncherMPIRun, c, 0, "/tmp/benchctl-agent-1/benchctl-agent", false, []string{"./ring"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Argv, " "); !strings.Contains(got, "-H n1:8,n2:8,n3:8 -np 24 ./ring") { // the node's GPUs by default
		t.Errorf("default ranks: %s", got)
	}
	if m.Env["OMPI_MCA_plm_rsh_agent"] != "/tmp/benchctl-agent-1/benchctl-agent : /bin/false" {
		t.Errorf("a process's hook: %q", m.Env["OMPI_MCA_plm_rsh_agent"])
	}
	if _, set := m.Env["OMPI_MCA_btl_vader_single_copy_mechanism"]; set {
		t.Error("a process got a container's setting")
	}
}

// hydra's line (MPICH, Intel MPI): ssh launcher through the agent, hosts, ranks per node.
func TestMPILineHydra(t *testing.T) {
	c := Context{NNodes: 2, NProc: 0, Hosts: []string{"gpu-a.cluster", "gpu-b.cluster"}}
	m, err := MPILine(manifest.LauncherMPIExec, c, 0, "/a", true, []string{"ring.mpich"})
	if err != nil {
		t.Fatal(err)
	}
	want := "/a launch mpiexec -- -launcher ssh -launcher-exec /a -hosts gpu-a.cluster,gpu-b.cluster -ppn 1 -n 2 ring.mpich"
	if got := strings.Join(m.Argv, " "); got != want {
		t.Errorf("argv\n got %s\nwant %s", got, want)
	}
	if m.Env["I_MPI_HYDRA_BOOTSTRAP"] != "ssh" || m.Env["I_MPI_HYDRA_BOOTSTRAP_EXEC"] != "/a" || m.Env["HYDRA_RMK"] != "user" {
		t.Errorf("env %v", m.Env)
	}
	// One node without Slurm's host list: localhost.
	m, err = MPILine(manifest.LauncherMPIExec, Context{NNodes: 1, NProc: 4}, 0, "/a", true, []string{"x"})
	if err != nil || !strings.Contains(strings.Join(m.Argv, " "), "-hosts localhost -ppn 4 -n 4 x") {
		t.Errorf("one node: %v %v", m.Argv, err)
	}
}

// What cannot make a launcher line is an input error (exit 4), said plainly.
func TestMPILineRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		c     Context
		ranks int
		want  string
	}{
		{"mpirun", Context{NNodes: 3, Hosts: []string{"n1"}}, 1, "needs their host names"},
		{"mpirun", Context{NNodes: 2, Hosts: []string{"n1", "n2,n3"}}, 1, `the job's host "n2,n3" is no host name`},
		{"mpiexec", Context{NNodes: 2, Hosts: []string{"n1", "fe80::1"}}, 1, `"fe80::1" is no host name`},
		{"mpirun", Context{NNodes: 1}, 2_000_000_000, "2000000000 ranks per node, more than 1024"},
		{"torchrun", Context{NNodes: 1}, 1, `"torchrun" is not an MPI launcher`},
	} {
		_, err := MPILine(c.name, c.c, c.ranks, "/a", true, []string{"x"})
		var le *Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !asError(err, &le) {
			t.Errorf("%s %+v: %v, want %q", c.name, c.c, err, c.want)
		}
	}
}

func asError(err error, le **Error) bool {
	e, ok := err.(*Error)
	*le = e
	return ok && e.InvalidInput()
}

// The rank that ended an MPI job, as the launchers report it (texts recorded on the
// testbed: ../shared/mpi/RECIPE.md §7), found at the end of a long log.
func TestDeadRank(t *testing.T) {
	for _, c := range []struct{ log, want string }{
		{"--------------------------------------------------------------------------\nmpirun noticed that process rank 3 with PID 417 on node n2 exited on signal 9 (Killed).\n",
			"MPI rank 3 on node n2 was killed by signal 9 (Killed)"},
		{"=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 994 RUNNING AT n2\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n",
			"an MPI rank (PID 994) on node n2 ended with exit code 9"},
		{"mpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated. The first process to do so was:\n\n  Process name: [[63229,1],4]\n  Exit code:    3\n",
			"MPI rank 4 exited with code 3"},
		{"ORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[7618,0],0] on node n1\n  Remote daemon: [[7618,0],1] on node n2\n",
			"the launcher lost its daemon on node n2"},
		{"Traceback (most recent call last):\nValueError: x\n", ""},
	} {
		p := filepath.Join(t.TempDir(), "b.log")
		// 6,000-character lines before it: the report is read from the end.
		if err := os.WriteFile(p, []byte(strings.Repeat(strings.Repeat("x", 6000)+"\n", 100)+c.log), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := DeadRank(p); !strings.HasPrefix(got, c.want) || c.want == "" && got != "" {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if DeadRank(filepath.Join(t.TempDir(), "none")) != "" {
		t.Error("no log")
	}
}

// ranksPerNode above what a node gives the benchmark is refused before the job starts
// (exit 4): its GPUs, or without GPUs its CPUs.
func TestCheckRanks(t *testing.T) {
	b := manifest.Benchmark{Name: "b", Launcher: manifest.LauncherMPIRun, RanksPerNode: 3}
	err := CheckRanks(b, "n1", 2)
	if err == nil || !strings.Contains(err.Error(), "ranksPerNode 3 is more than the 2 GPUs node n1 gives it") {
		t.Errorf("GPUs: %v", err)
	}
	b.RanksPerNode = manifest.MaxRanksPerNode
	if err := CheckRanks(b, "n1", 0); err == nil || !strings.Contains(err.Error(), "CPUs node n1 gives it") {
		t.Errorf("CPUs: %v", err)
	}
	b.RanksPerNode = 2
	if err := CheckRanks(b, "n1", 2); err != nil {
		t.Error(err)
	}
	b.Launcher = ""
	b.RanksPerNode = 99
	if err := CheckRanks(b, "n1", 2); err != nil {
		t.Error("a launcher that is not MPI:", err)
	}
}

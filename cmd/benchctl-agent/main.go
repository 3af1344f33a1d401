// Command benchctl-agent is benchctl's remote-launch agent: an MPI launcher (Open MPI's
// mpirun through plm_rsh_agent, MPICH's or Intel MPI's mpiexec through -launcher-exec)
// calls it as it would call ssh, `benchctl-agent HOST COMMAND...`, and it has the node's
// benchctl start the command beside HOST's benchmark over the job's channel: no sshd, no
// keys. benchctl places it, read-only, where every node's benchmark runs (docs/mpi.md). It
// is a static binary of the standard library alone, so it runs in any image.
package main

import (
	"os"

	"github.com/benchctl/benchctl/internal/agentwire"
)

func main() {
	os.Exit(agentwire.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

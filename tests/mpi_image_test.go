package tests

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/tests/testbed"
)

// The testbed's MPI image is in every node's engine with the same id, and in it Open MPI's
// mpirun runs the mpi4py ping-pong and the C ring, MPICH's mpiexec its C ring (2 ranks in
// one container: the image's own check; the jobs across nodes are the MPI launchers' tests).
func TestMPIImageOnEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	if tb.MPIImage == "" {
		t.Fatal("the testbed has no MPI image: run tests/testbed/up.sh again")
	}
	var id string
	for _, n := range tb.Nodes {
		res, err := tb.Engine(t, n).ImageInspect(context.Background(), tb.MPIImage)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if id != "" && res.ID != id {
			t.Errorf("%s holds %s as %s, another node as %s", n, tb.MPIImage, res.ID, id)
		}
		id = res.ID
	}
	ompi := "mpirun --allow-run-as-root --mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1 -np 2 "
	script := ompi + "python3 /usr/local/bin/pingpong.py 20 8 && " + ompi + "ring.openmpi 20 8 && " +
		"cd /tmp && UCX_TLS=tcp,self timeout 60 mpiexec.mpich -n 2 ring.mpich 20 8 && command -v hpcc"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "host", tb.MPIImage, "sh", "-c", script)
	cmd.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	out, err := cmd.CombinedOutput()
	for _, want := range []string{"pingpong size=8 latency_us=", "pingpong ranks=2", "ring ranks=2 laps=20 bytes=8", "/usr/bin/hpcc"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q (%v):\n%s", want, err, out)
		}
	}
	if strings.Count(string(out), "ring ranks=2") != 2 {
		t.Errorf("both rings (Open MPI's and MPICH's) should report:\n%s", out)
	}
}

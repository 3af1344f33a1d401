package runner

import (
	"strconv"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
)

func TestDetectNode(t *testing.T) {
	n, err := DetectNode(testutil.LookupOf(map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_PROCID": "2",
		"SLURM_STEP_NUM_TASKS": "3", "SLURM_STEP_NUM_NODES": "3", "SLURM_STEP_NODELIST": "gpu-[07-09]", "SLURMD_NODENAME": "gpu-09",
		"SLURM_RESTART_COUNT": "1"}))
	if err != nil || n.Rank != 2 || n.World != 3 || n.MasterAddr != "gpu-07" || n.Host != "gpu-09" || n.DirName() != "77.1" ||
		n.NodeName() != "2-gpu-09" || n.Source != "slurm" || n.MasterPort < 20000 {
		t.Fatalf("slurm: %+v %v", n, err)
	}
	if p := n.BarrierPorts(); len(p) != 8 || p[0] != n.MasterPort+1 {
		t.Errorf("ports %v", p)
	}
	n, err = DetectNode(testutil.LookupOf(map[string]string{"NODE_RANK": "1", "NNODES": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "BENCHCTL_JOB_ID": "exp1"}))
	if err != nil || n.Rank != 1 || n.MasterPort != 29500 || n.Source != "env" || n.DirName() != "exp1" {
		t.Fatalf("env: %+v %v", n, err)
	}
	n, err = DetectNode(testutil.LookupOf(nil))
	if err != nil || n.World != 1 || n.Rank != 0 || n.Source != "local" || !strings.HasPrefix(n.JobID, "local-") {
		t.Fatalf("local: %+v %v", n, err)
	}
	if a, b := portBase("1"), portBase("2"); a == b {
		t.Errorf("two jobs share a port range")
	}
}

// Every job's ports (MASTER_PORT to +17) stay below Linux's default ephemeral range
// (32768-60999), where an outgoing connection could hold the port rank 0 listens on;
// and the ranges are many.
func TestPortBaseAvoidsEphemeralPorts(t *testing.T) {
	seen := map[int]bool{}
	for i := range 200000 {
		b := portBase(strconv.Itoa(i))
		if b < 20000 || b+17 >= 32768 || (b-20000)%20 != 0 {
			t.Fatalf("job %d: ports %d-%d", i, b, b+17)
		}
		seen[b] = true
	}
	if len(seen) != portRanges {
		t.Errorf("%d distinct ranges, want %d", len(seen), portRanges)
	}
}

func TestDetectNodeErrors(t *testing.T) {
	for _, c := range []struct {
		env map[string]string
		v   string
	}{
		{map[string]string{"NODE_RANK": "x"}, "NODE_RANK"},
		{map[string]string{"NODE_RANK": "2", "NNODES": "2"}, "NODE_RANK"},
		{map[string]string{"NODE_RANK": "0", "NNODES": "2", "BENCHCTL_JOB_ID": "j"}, "MASTER_ADDR"},
		{map[string]string{"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "h"}, "BENCHCTL_JOB_ID"},
		{map[string]string{"MASTER_PORT": "80"}, "MASTER_PORT"},
		{map[string]string{"MASTER_ADDR": "h0"}, "MASTER_ADDR"},
		{map[string]string{"MASTER_ADDR": "h0", "BENCHCTL_JOB_ID": "j"}, "MASTER_ADDR"},
		{map[string]string{"BENCHCTL_JOB_ID": "../x"}, "BENCHCTL_JOB_ID"},
		{map[string]string{"BENCHCTL_JOB_ID": "abc.2"}, "BENCHCTL_JOB_ID"},
		{map[string]string{"BENCHCTL_JOB_ID": "a\nb"}, "BENCHCTL_JOB_ID"},
		{map[string]string{"NODE_RANK": "0", "NNODES": "9223372036854775807", "MASTER_ADDR": "h", "BENCHCTL_JOB_ID": "j"}, "NNODES"},
		{map[string]string{"NODE_RANK": "0", "NNODES": "2000000", "MASTER_ADDR": "h", "BENCHCTL_JOB_ID": "j"}, "NNODES"},
		{map[string]string{"NODE_RANK": "1"}, "NNODES"},
		{map[string]string{"NNODES": "2", "MASTER_ADDR": "h", "BENCHCTL_JOB_ID": "j"}, "NODE_RANK"},
		{map[string]string{"NODE_RANK": "+1", "NNODES": "2", "MASTER_ADDR": "h", "BENCHCTL_JOB_ID": "j"}, "NODE_RANK"},
		{map[string]string{"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "h0:29500", "BENCHCTL_JOB_ID": "j"}, "MASTER_ADDR"},
		{map[string]string{"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "h 0", "BENCHCTL_JOB_ID": "j"}, "MASTER_ADDR"},
		{map[string]string{"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NODELIST": "n[1-2]"}, "SLURM_STEP_NUM_TASKS"},
		{map[string]string{"SLURM_JOB_ID": "..", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "n1"}, "SLURM_JOB_ID"},
		{map[string]string{"SLURM_JOB_ID": "12.3", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "n1"}, "SLURM_JOB_ID"},
		{map[string]string{"SLURM_JOB_ID": "1\n2", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "n1"}, "SLURM_JOB_ID"},
	} {
		_, err := DetectNode(testutil.LookupOf(c.env))
		if err == nil || !strings.HasPrefix(err.Error(), c.v+":") {
			t.Errorf("%v: error %v does not name %s", c.env, err, c.v)
		}
	}
}

package scheduler_test

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/local"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// DetectNode as benchctl's commands call it: Slurm, then the local fallback.
func DetectNode(lookup scheduler.Lookup) (scheduler.Node, error) {
	return scheduler.DetectNode(lookup, slurm.Scheduler{}, local.Scheduler{})
}

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

// A list without a fallback that no scheduler claims is an error, not a one-node job.
func TestNoSchedulerClaimsTheEnvironment(t *testing.T) {
	if _, err := scheduler.DetectNode(testutil.LookupOf(nil), slurm.Scheduler{}); err != scheduler.ErrNoScheduler {
		t.Fatalf("%v", err)
	}
}

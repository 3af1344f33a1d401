package slurm

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
)

func step(extra map[string]string) map[string]string {
	m := map[string]string{"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "3",
		"SLURM_STEP_NUM_NODES": "3", "SLURM_STEP_NODELIST": "gpu-[01-03]", "SLURM_STEP_TASKS_PER_NODE": "1(x3)", "SLURMD_NODENAME": "gpu-02"}
	for k, v := range extra {
		if v == "-" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func TestTaskFromEnv(t *testing.T) {
	got, err := TaskFromEnv(testutil.LookupOf(step(map[string]string{"SLURM_RESTART_COUNT": "2"})))
	want := Task{JobID: "42", Attempt: 2, Rank: 1, World: 3, Nodes: []string{"gpu-01", "gpu-02", "gpu-03"}, Host: "gpu-02", InStep: true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v", got, err)
	}
	// The batch script of a one-node job is rank 0 of 1.
	one, err := TaskFromEnv(testutil.LookupOf(map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "n1", "SLURM_PROCID": "0"}))
	if err != nil || one.World != 1 || one.Rank != 0 || one.InStep {
		t.Fatalf("batch one-node: %+v %v", one, err)
	}
}

func TestTaskFromEnvErrors(t *testing.T) {
	cases := []struct {
		env     map[string]string
		varName string
		msg     string
	}{
		{step(map[string]string{"SLURM_STEP_NUM_TASKS": "6", "SLURM_STEP_TASKS_PER_NODE": "2(x3)"}), "SLURM_STEP_NUM_TASKS", "--ntasks-per-node=1"},
		{step(map[string]string{"SLURM_STEP_TASKS_PER_NODE": "2,1(x2)"}), "SLURM_STEP_TASKS_PER_NODE", "-N <nodes>"},
		{step(map[string]string{"SLURM_PROCID": "x"}), "SLURM_PROCID", "not a whole number"},
		{step(map[string]string{"SLURM_PROCID": "-"}), "SLURM_PROCID", "is not set"},
		{step(map[string]string{"SLURM_PROCID": "5"}), "SLURM_PROCID", "not below"},
		{step(map[string]string{"SLURM_STEP_NODELIST": "gpu-[01-03"}), "SLURM_STEP_NODELIST", "unclosed"},
		{step(map[string]string{"SLURM_STEP_NODELIST": "gpu-[01-02]"}), "SLURM_STEP_NODELIST", "lists 2 hosts"},
		{step(map[string]string{"SLURM_JOB_ID": ""}), "SLURM_JOB_ID", "not a job id"},
		{step(map[string]string{"SLURM_RESTART_COUNT": "-1"}), "SLURM_RESTART_COUNT", "not a whole number"},
		{map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "3", "SLURM_JOB_NODELIST": "n[1-3]"}, "SLURM_STEP_ID", "srun"},
	}
	for _, c := range cases {
		_, err := TaskFromEnv(testutil.LookupOf(c.env))
		var ee *EnvError
		if !errors.As(err, &ee) || ee.Var != c.varName || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("want %s error with %q, got %v", c.varName, c.msg, err)
		}
	}
}

func TestMaxTasksPerNode(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "1(x4)": 1, "2(x3),1": 2, "1,4,2(x2)": 4} {
		if got, err := maxTasksPerNode(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1(x3)junk", "-5", "0(x3)", "+1", "1(3)", "1(x0)", "1(x3", "a"} {
		if got, err := maxTasksPerNode(bad); err == nil {
			t.Errorf("%q accepted as %d", bad, got)
		}
	}
}

package slurm_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"testing"

	"github.com/benchctl/benchctl/scheduler/schedulertest"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// Slurm passes the conformance suite on environments as srun gives its tasks (recorded
// from Slurm 22.05; tests/scheduler_test.go runs the suite against the testbed's real
// srun and squeue), with squeue and sacct answering that the job is unknown.
func TestSlurmConformanceOnRecordedEnvironments(t *testing.T) {
	schedulertest.Run(t, schedulertest.Harness{
		Scheduler: slurm.Scheduler{Run: unknownJobs{}},
		MaxNodes:  3,
		Job: func(t *testing.T, n int) []map[string]string {
			var envs []map[string]string
			for r := range n {
				envs = append(envs, map[string]string{"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": strconv.Itoa(r),
					"SLURM_STEP_NUM_TASKS": strconv.Itoa(n), "SLURM_STEP_NUM_NODES": strconv.Itoa(n), "SLURM_STEP_NODELIST": "n[1-" + strconv.Itoa(n) + "]",
					"SLURM_STEP_TASKS_PER_NODE": "1(x" + strconv.Itoa(n) + ")", "SLURMD_NODENAME": "n" + strconv.Itoa(r+1)})
			}
			return envs
		},
		Garbled: []schedulertest.Garbled{
			{Env: map[string]string{"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NODELIST": "n[1-2]"}, Var: "SLURM_STEP_NUM_TASKS"},
			{Env: map[string]string{"SLURM_JOB_ID": "..", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "n1"}, Var: "SLURM_JOB_ID"},
			{Env: map[string]string{"SLURM_JOB_ID": "12.3", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "n1"}, Var: "SLURM_JOB_ID"},
			{Env: map[string]string{"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "2", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NODELIST": "n[1-2]"}, Var: "SLURM_PROCID"},
			{Env: map[string]string{"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NODELIST": "n[1-99999999]"}, Var: "SLURM_STEP_NODELIST"},
			{Env: map[string]string{"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "n1", "MASTER_PORT": "99999"}, Var: "MASTER_PORT"},
		},
		UnknownJob: "999999",
	})
}

// unknownJobs is a Slurm that has never had a job: squeue and scontrol say the id is
// invalid, sacct lists nothing.
type unknownJobs struct{}

func (unknownJobs) Output(_ context.Context, name string, _ ...string) ([]byte, error) {
	if name == "sacct" {
		return nil, nil
	}
	err := exec.Command("false").Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ee.Stderr = []byte("slurm_load_jobs error: Invalid job id specified\n")
	}
	return nil, err
}

// How many of a step's tasks print at once: the step's count, else the job's inside a
// step; a batch script (no step) is one process; garbage is none known.
func TestTasksPrinting(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, 0},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "4"}, 4},
		{map[string]string{"SLURM_NTASKS": "4"}, 0},
		{map[string]string{"SLURM_NTASKS": "4", "SLURM_STEP_ID": "0"}, 4},
		{map[string]string{"SLURM_STEP_NUM_TASKS": " 2 ", "SLURM_NTASKS": "8", "SLURM_STEP_ID": "0"}, 2},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "many", "SLURM_STEP_ID": "0"}, 0},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "-3"}, 0},
	} {
		if got := (slurm.Scheduler{}).TasksPrinting(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }); got != c.want {
			t.Errorf("%v: %d, want %d", c.env, got, c.want)
		}
	}
}

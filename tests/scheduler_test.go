package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/scheduler/schedulertest"
	"github.com/benchctl/benchctl/scheduler/slurm"
	"github.com/benchctl/benchctl/tests/testbed"
)

// Slurm passes the scheduler conformance suite on the testbed: each job's tasks are real
// srun tasks, one per node, whose environments the suite reads; squeue, scontrol and
// sacct answer for a job Slurm never had.
func TestSlurmSchedulerConformance(t *testing.T) {
	tb := testbed.Require(t)
	t.Setenv("SLURM_CONF", tb.SlurmConf) // for the JobState questions (squeue, sacct)
	schedulertest.Run(t, schedulertest.Harness{
		Scheduler: slurm.Scheduler{},
		MaxNodes:  len(tb.Nodes),
		Job: func(t *testing.T, n int) []map[string]string {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "srun", "-N", strconv.Itoa(n), "--ntasks-per-node=1", "-p", tb.Partition,
				"--output", filepath.Join(dir, "env.%t"), "env", "-0")
			cmd.Env = tb.Env()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("srun: %v\n%s", err, out)
			}
			var envs []map[string]string
			for task := range n {
				b, err := os.ReadFile(filepath.Join(dir, "env."+strconv.Itoa(task)))
				if err != nil {
					t.Fatal(err)
				}
				env := map[string]string{}
				for _, kv := range bytes.Split(b, []byte{0}) {
					if k, v, ok := strings.Cut(string(kv), "="); ok {
						env[k] = v
					}
				}
				envs = append(envs, env)
			}
			return envs
		},
		Garbled: []schedulertest.Garbled{
			{Env: map[string]string{"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "n1"}, Var: "SLURM_STEP_NUM_TASKS"},
			{Env: map[string]string{"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NODELIST": "n1"}, Var: "SLURM_STEP_NODELIST"},
		},
		UnknownJob: "987654321",
	})
}

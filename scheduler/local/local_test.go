package local_test

import (
	"strconv"
	"testing"

	"github.com/benchctl/benchctl/scheduler/local"
	"github.com/benchctl/benchctl/scheduler/schedulertest"
)

// The local scheduler passes the conformance suite: its jobs are started by hand (or by
// another launcher) with NODE_RANK, NNODES, MASTER_ADDR and BENCHCTL_JOB_ID.
func TestLocalConformance(t *testing.T) {
	schedulertest.Run(t, schedulertest.Harness{
		Scheduler: local.Scheduler{},
		MaxNodes:  4,
		Job: func(t *testing.T, n int) []map[string]string {
			if n == 1 {
				return []map[string]string{{}} // benchctl run, by hand
			}
			var envs []map[string]string
			for r := range n {
				envs = append(envs, map[string]string{"NODE_RANK": strconv.Itoa(r), "NNODES": strconv.Itoa(n),
					"MASTER_ADDR": "10.0.0.1", "BENCHCTL_JOB_ID": "conformance-" + strconv.Itoa(n)})
			}
			return envs
		},
		Garbled: []schedulertest.Garbled{
			{Env: map[string]string{"NODE_RANK": "x"}, Var: "NODE_RANK"},
			{Env: map[string]string{"NODE_RANK": "2", "NNODES": "2"}, Var: "NODE_RANK"},
			{Env: map[string]string{"NODE_RANK": "0", "NNODES": "2", "BENCHCTL_JOB_ID": "j"}, Var: "MASTER_ADDR"},
			{Env: map[string]string{"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "h"}, Var: "BENCHCTL_JOB_ID"},
			{Env: map[string]string{"MASTER_PORT": "80"}, Var: "MASTER_PORT"},
			{Env: map[string]string{"MASTER_ADDR": "h0"}, Var: "MASTER_ADDR"},
			{Env: map[string]string{"BENCHCTL_JOB_ID": "../x"}, Var: "BENCHCTL_JOB_ID"},
			{Env: map[string]string{"NODE_RANK": "0", "NNODES": "2147483648", "MASTER_ADDR": "h", "BENCHCTL_JOB_ID": "j"}, Var: "NNODES"},
		},
		UnknownJob: "never-submitted",
	})
}

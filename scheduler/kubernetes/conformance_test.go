package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/benchctl/benchctl/scheduler/schedulertest"
)

// pods is a Lister of one job's pods, all running with their addresses.
type pods struct{ n int }

func (p pods) JobPods(context.Context, string, string) ([]Pod, error) {
	var out []Pod
	for i := range p.n {
		out = append(out, Pod{Name: fmt.Sprintf("p-%d", i), Index: i, IP: fmt.Sprintf("10.0.0.%d", 10+i), Phase: "Running"})
	}
	return out, nil
}

// The scheduler conformance suite, for the pods of a job as the Indexed Job starts them
// (their API answered by pods; the cluster's own is the e2e tests').
func TestConformance(t *testing.T) {
	const max = 4
	env := func(n, rank int) map[string]string {
		return map[string]string{EnvJob: "k8s-7", EnvNodes: strconv.Itoa(n), EnvIndex: strconv.Itoa(rank), EnvNamespace: "bench",
			EnvNode: fmt.Sprintf("node-%d", rank), EnvPodIP: fmt.Sprintf("10.0.0.%d", 10+rank), EnvPending: "1s"}
	}
	garbled := func(k, v string) schedulertest.Garbled {
		e := env(2, 1)
		e[k] = v
		return schedulertest.Garbled{Env: e, Var: k}
	}
	schedulertest.Run(t, schedulertest.Harness{
		Scheduler: Scheduler{API: pods{max}, Poll: time.Millisecond},
		Job: func(t *testing.T, n int) []map[string]string {
			var out []map[string]string
			for r := n - 1; r >= 0; r-- {
				out = append(out, env(n, r))
			}
			return out
		},
		MaxNodes:   max,
		Garbled:    []schedulertest.Garbled{garbled(EnvNodes, "two"), garbled(EnvIndex, "7"), garbled(EnvPending, "soon"), garbled("MASTER_PORT", "80")},
		UnknownJob: "never-submitted",
	})
}

// Package local is the scheduler of jobs that no batch system started: a one-node job on
// this machine (`benchctl run` by hand), or a multi-node job whose nodes were each started
// by something else (torchrun-style launchers, a CI matrix, a person at each machine),
// described by NODE_RANK, NNODES, MASTER_ADDR, MASTER_PORT and BENCHCTL_JOB_ID. It claims
// every environment, so it is detected last.
package local

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// Scheduler is the local scheduler. Its node context's Source is "env" for a job described
// by NODE_RANK/NNODES, "local" for a one-node job.
type Scheduler struct{}

var _ scheduler.Scheduler = Scheduler{}

// Name is "local".
func (Scheduler) Name() string { return "local" }

// Detect claims every environment: local is the fallback.
func (Scheduler) Detect(scheduler.Lookup) bool { return true }

// Node reads NODE_RANK, NNODES, MASTER_ADDR, MASTER_PORT and BENCHCTL_JOB_ID: all unset is a
// one-node job (rank 0 of 1, a job id of its own unless BENCHCTL_JOB_ID gives one);
// NODE_RANK or NNODES set is one node of a multi-node job, which needs all of them (and
// the same BENCHCTL_JOB_ID on every node); MASTER_ADDR alone is an error.
func (Scheduler) Node(lookup scheduler.Lookup) (scheduler.Node, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	var n scheduler.Node
	switch {
	case get("NODE_RANK") != "" || get("NNODES") != "":
		n.Source = "env"
		var err error
		if n.Rank, err = scheduler.EnvInt(get, "NODE_RANK", 0); err != nil {
			return n, err
		}
		if get("NNODES") == "" {
			return n, &scheduler.ContextError{Var: "NNODES", Msg: "is not set: with NODE_RANK, give the number of nodes of the job (NNODES=2 ...)"}
		}
		if n.World, err = scheduler.EnvInt(get, "NNODES", 1); err != nil {
			return n, err
		}
		if n.World < 1 || n.World > scheduler.MaxNodes {
			return n, &scheduler.ContextError{Var: "NNODES", Msg: fmt.Sprintf("%d is not a node count (1 to %d)", n.World, scheduler.MaxNodes)}
		}
		if n.World > 1 && get("NODE_RANK") == "" {
			return n, &scheduler.ContextError{Var: "NODE_RANK", Msg: fmt.Sprintf("is not set: each of the NNODES=%d nodes needs its own rank (0 to %d)", n.World, n.World-1)}
		}
		if n.Rank >= n.World {
			return n, &scheduler.ContextError{Var: "NODE_RANK", Msg: fmt.Sprintf("%d is not below NNODES=%d", n.Rank, n.World)}
		}
		n.MasterAddr = get("MASTER_ADDR")
		if n.MasterAddr != "" && !scheduler.ValidHost(n.MasterAddr) {
			return n, &scheduler.ContextError{Var: "MASTER_ADDR", Msg: fmt.Sprintf("%q is not a host name or IP address (the port goes in MASTER_PORT)", n.MasterAddr)}
		}
		if n.MasterAddr == "" && n.World > 1 {
			return n, &scheduler.ContextError{Var: "MASTER_ADDR", Msg: "is not set: a multi-node job outside Slurm needs the address of rank 0"}
		}
		n.JobID = get("BENCHCTL_JOB_ID")
		if n.JobID == "" && n.World > 1 {
			return n, &scheduler.ContextError{Var: "BENCHCTL_JOB_ID", Msg: "is not set: every node of a multi-node job outside Slurm needs the same job id"}
		}
		n.Host, _ = os.Hostname()
		n.Hosts = make([]string, n.World)
		for i := range n.Hosts {
			n.Hosts[i] = "rank" + strconv.Itoa(i)
		}
		n.Hosts[0], n.Hosts[n.Rank] = n.MasterAddr, n.Host
	case get("MASTER_ADDR") != "":
		// Run on several machines this way, each would be a one-node job of its own.
		return n, &scheduler.ContextError{Var: "MASTER_ADDR", Msg: "is set, but NODE_RANK and NNODES are not: outside Slurm, every node of a multi-node job sets all three (and the same BENCHCTL_JOB_ID); for a one-node job, unset MASTER_ADDR"}
	default:
		n = scheduler.Node{World: 1, Source: "local", JobID: get("BENCHCTL_JOB_ID")}
		n.Host, _ = os.Hostname()
		n.Hosts = []string{n.Host}
		n.MasterAddr = "127.0.0.1"
	}
	return n.Complete(lookup, "BENCHCTL_JOB_ID")
}

// JobState: no batch system keeps local jobs, so none is known (the job folder's status is
// what there is to say).
func (Scheduler) JobState(context.Context, string) (jobdir.SchedulerState, error) {
	return jobdir.SchedulerState{}, nil
}

// Wait returns at once with the state JobState gives: there is nothing to follow.
func (s Scheduler) Wait(ctx context.Context, jobID string, tick func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error) {
	st, err := s.JobState(ctx, jobID)
	if tick != nil {
		tick(st, err)
	}
	return st, err
}

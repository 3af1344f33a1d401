package kubernetes

import (
	"context"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// Scheduler is Kubernetes as the pods of a benchctl Job see it: a pod's node context
// (PodNode, through the in-cluster API). The Job's state as a workstation asks it (jobs,
// submit --wait, collect) comes with the submission; until then it is not known here.
type Scheduler struct {
	// API lists the job's pods; nil: the in-cluster API (InCluster).
	API Lister
	// Poll is how often the pods are asked for while they come up (0: every second).
	Poll time.Duration
}

var _ scheduler.Scheduler = Scheduler{}

// Name is "kubernetes", as node.json and job.json record it.
func (Scheduler) Name() string { return "kubernetes" }

// Detect reports whether this is a pod of a benchctl Job: its Job's id and its completion
// index are set.
func (Scheduler) Detect(lookup scheduler.Lookup) bool {
	_, job := lookup(EnvJob)
	_, index := lookup(EnvIndex)
	return job && index
}

// Node is the pod's node context (PodNode), completed as every scheduler's is.
func (s Scheduler) Node(lookup scheduler.Lookup) (scheduler.Node, error) {
	api := s.API
	if api == nil {
		a, err := InCluster(lookup)
		if err != nil {
			return scheduler.Node{}, err
		}
		api = a
	}
	poll := s.Poll
	if poll <= 0 {
		poll = time.Second
	}
	n, err := PodNode(context.Background(), lookup, api, poll)
	if err != nil {
		return n, err
	}
	return n.Complete(lookup, EnvJob)
}

// JobState is not known from a pod: the zero state.
func (Scheduler) JobState(context.Context, string) (jobdir.SchedulerState, error) {
	return jobdir.SchedulerState{}, nil
}

// Wait returns at once with the zero state (see JobState).
func (Scheduler) Wait(context.Context, string, func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error) {
	return jobdir.SchedulerState{}, nil
}

package kubernetes

import (
	"context"
	"time"

	"github.com/benchctl/benchctl/scheduler"
)

// Scheduler is Kubernetes: to a pod of a benchctl Job, its node context (PodNode, through
// the in-cluster API); to a workstation, the state of its jobs (jobs, submit --wait,
// collect, cancel) through Cluster.
type Scheduler struct {
	// API lists the job's pods; nil: the in-cluster API (InCluster).
	API Lister
	// Cluster is the cluster a workstation asks about jobs; nil: none (JobState knows no
	// job).
	Cluster *Cluster
	// Poll is how often the pods (and, waiting, the Job) are asked for (0: every second).
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

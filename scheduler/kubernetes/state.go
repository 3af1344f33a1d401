package kubernetes

import (
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/benchctl/benchctl/jobdir"
)

// The states a job's Job is said to be in (JobState.State), in Slurm's spelling where
// there is one, so that a person reads one vocabulary.
const (
	StatePending   = "PENDING"    // pods not all running yet
	StateRunning   = "RUNNING"    // every pod running
	StateEnding    = "COMPLETING" // the Job has its verdict; its pods are ending
	StateSuspended = "SUSPENDED"
	StateCompleted = "COMPLETED"
	StateFailed    = "FAILED"
)

// source is JobState's Source.
const source = "kubernetes API"

// jobState is what the Job and its pods say of a benchmark job: its state (with the
// Job's reason when it failed, and a pod's reason while one is pending), whether it is
// still active.
func jobState(job *batchv1.Job, pods []corev1.Pod) jobdir.SchedulerState {
	st := jobdir.SchedulerState{Known: true, Active: true, Source: source, Scheduler: "Kubernetes"}
	cond := func(t batchv1.JobConditionType) *batchv1.JobCondition {
		for i, c := range job.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return &job.Status.Conditions[i]
			}
		}
		return nil
	}
	why := func(c *batchv1.JobCondition) string {
		if c.Reason == "" {
			return ""
		}
		return " (" + c.Reason + ")"
	}
	switch {
	case cond(batchv1.JobFailed) != nil:
		st.State, st.Active = StateFailed+why(cond(batchv1.JobFailed)), false
		if c := cond(batchv1.JobFailed); c.Message != "" { // names the pod that failed it
			st.State = strings.TrimSuffix(st.State, ")") + ": " + clipReason(c.Message) + ")"
		}
	case cond(batchv1.JobComplete) != nil:
		st.State, st.Active = StateCompleted, false
	case cond(batchv1.JobFailureTarget) != nil:
		st.State = StateEnding + " (failing: " + strings.TrimSuffix(strings.TrimPrefix(why(cond(batchv1.JobFailureTarget)), " ("), ")") + ")"
	case cond(batchv1.JobSuccessCriteriaMet) != nil:
		st.State = StateEnding
	case cond(batchv1.JobSuspended) != nil:
		st.State = StateSuspended
	default:
		st.State = StateRunning
		if pending := pendingPods(pods); len(pending) > 0 || len(pods) < int(ptrOr(job.Spec.Parallelism, 1)) {
			st.State = StatePending
			if len(pending) > 0 {
				st.State += " (" + pending[0] + ")"
			}
		}
	}
	return st
}

func ptrOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

// pendingPods says, in index order, each pod that is not running yet and why: the
// scheduler's reason (Unschedulable: 0/2 nodes are available: ...) or the kubelet's
// (ImagePullBackOff: ...).
func pendingPods(pods []corev1.Pod) []string {
	var out []string
	sort.Slice(pods, func(i, j int) bool { return podIndex(pods[i]) < podIndex(pods[j]) })
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		out = append(out, fmt.Sprintf("pod %s: %s", p.Name, pendingReason(p)))
	}
	return out
}

// pendingReason is why a pod is pending, in the cluster's words.
func pendingReason(p corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			return clipReason(w.Reason + ": " + w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return clipReason(c.Reason + ": " + c.Message)
		}
	}
	if p.Spec.NodeName == "" {
		return "not yet scheduled"
	}
	return "starting on " + p.Spec.NodeName
}

// clipReason keeps a cluster's message to one line of a readable length.
func clipReason(s string) string {
	s = strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimSpace(s), ":")), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// podIndex is a pod's completion index (its annotation), -1 when it has none.
func podIndex(p corev1.Pod) int {
	var i int
	if _, err := fmt.Sscanf(p.Annotations[batchv1.JobCompletionIndexAnnotation], "%d", &i); err != nil {
		return -1
	}
	return i
}

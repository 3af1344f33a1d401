package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/archive"
)

// LabelRole marks a job's pods that are not its nodes (the collector).
const LabelRole = "benchctl.io/role"

// collectorStart bounds how long the collector pod may take to start (scheduled, its image
// pulled).
const collectorStart = 5 * time.Minute

// Fetch copies job id's folders from the cluster's results volume into l, for a machine
// that reaches the API but does not mount the volume: a collector pod (the Job's results
// volume read-only, the Job's benchctl image) writes them as a tar stream to an exec of
// `benchctl job-archive`, read here as a hostile stream (archive.Read). The pod is deleted
// when it is done, whatever happened. It returns how many files came.
func (s Scheduler) Fetch(ctx context.Context, id string, l jobdir.Layout) (int, error) {
	cl, err := s.cluster().connect()
	if errors.Is(err, ErrNoCluster) {
		return 0, exitcode.Usagef("give --kubeconfig FILE or set KUBECONFIG, or --shared-dir where the results volume is mounted", "%v", err)
	}
	if err != nil {
		return 0, err
	}
	job := &batchv1.Job{}
	err = cl.api.jobs(cl.ns).get(ctx, Name(id), job)
	if apierrors.IsNotFound(err) {
		return 0, exitcode.Usagef("give --shared-dir where the results volume is mounted (the Job is gone: it was cancelled or deleted), or --namespace",
			"kubernetes: no job %s in namespace %s to fetch the folders of", id, cl.ns)
	}
	if err != nil {
		return 0, cl.told("reading job "+id, err)
	}
	pod, err := collectorPod(job.Spec.Template.Spec, id)
	if err != nil {
		return 0, err
	}
	made := &corev1.Pod{}
	if err := cl.api.pods(cl.ns).create(ctx, pod, made); err != nil {
		return 0, cl.told("creating the collector pod", err)
	}
	defer func() {
		zero := int64(0)
		if err := cl.api.pods(cl.ns).delete(context.WithoutCancel(ctx), made.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			slog.Warn("kubernetes: could not delete the collector pod", "pod", made.Name, "err", err)
		}
	}()
	if err := cl.running(ctx, made.Name); err != nil {
		return 0, err
	}
	return cl.archiveFrom(ctx, made.Name, id, l)
}

// collectorPod is the pod that reads a job's folders: on the nodes the Job's pods may run
// on (its node selector and tolerations: where the volume is), the results volume
// read-only, the benchctl image's agent waiting until the pod is deleted.
func collectorPod(tpl corev1.PodSpec, id string) (*corev1.Pod, error) {
	var results *corev1.Volume
	for i := range tpl.Volumes {
		if tpl.Volumes[i].Name == "results" {
			results = &tpl.Volumes[i]
		}
	}
	image := ""
	for _, c := range tpl.InitContainers {
		if c.Name == "benchctl" {
			image = c.Image
		}
	}
	if results == nil || image == "" {
		return nil, exitcode.Usagef("collect it where its results volume is mounted (--shared-dir)", "kubernetes: job %s's Job is not one benchctl made (no results volume or benchctl image)", id)
	}
	var b [2]byte
	_, _ = rand.Read(b[:])
	no, deadline, grace := false, int64(3600), int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: Name(id) + "-collect-" + hex.EncodeToString(b[:]),
			Labels: map[string]string{LabelJob: id, LabelName: "benchctl", LabelRole: "collector"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
			ActiveDeadlineSeconds: &deadline, TerminationGracePeriodSeconds: &grace,
			NodeSelector: tpl.NodeSelector, Tolerations: tpl.Tolerations, PriorityClassName: tpl.PriorityClassName,
			Containers: []corev1.Container{{Name: "collect", Image: image, Command: []string{agentIn, "wait"},
				VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: SharedDir, ReadOnly: true}}}},
			Volumes: []corev1.Volume{*results}},
	}, nil
}

// running waits for the collector pod to run; one that cannot start is an error with the
// cluster's reason.
func (cl client) running(ctx context.Context, name string) error {
	deadline := time.Now().Add(collectorStart)
	for {
		p := &corev1.Pod{}
		if err := cl.api.pods(cl.ns).get(ctx, name, p); err != nil {
			return cl.told("reading the collector pod", err)
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			return nil
		case corev1.PodFailed, corev1.PodSucceeded:
			return fmt.Errorf("kubernetes: the collector pod %s ended before it was asked anything (%s)", name, p.Status.Phase)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubernetes: the collector pod %s did not start in %s: %s", name, collectorStart, pendingReason(*p))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// archiveFrom runs `benchctl job-archive` in the collector pod and extracts what it writes
// into l.
func (cl client) archiveFrom(ctx context.Context, pod, id string, l jobdir.Layout) (int, error) {
	req := cl.api.core.Post().Resource("pods").Namespace(cl.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "collect", Command: []string{benchctlIn, "job-archive", id, "--shared-dir", SharedDir},
			Stdout: true, Stderr: true}, parameterCodec())
	ws, err := remotecommand.NewWebSocketExecutor(cl.rc, "GET", req.URL().String())
	if err != nil {
		return 0, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cl.rc, "POST", req.URL())
	if err != nil {
		return 0, err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	stderr := &tail{max: 4 << 10}
	done := make(chan error, 1)
	go func() {
		err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: pw, Stderr: stderr})
		pw.CloseWithError(err)
		done <- err
	}()
	files, rerr := archive.Read(pr, l, id, archive.Limits{})
	if rerr != nil {
		cancel()
		pr.CloseWithError(rerr)
	} else {
		_, _ = io.Copy(io.Discard, pr) // what follows the archive's end
	}
	xerr := <-done
	switch {
	case xerr != nil && rerr == nil:
		return files, fmt.Errorf("kubernetes: benchctl job-archive in the collector pod: %v%s", xerr, stderr.said())
	case rerr != nil:
		return files, fmt.Errorf("kubernetes: fetching job %s's folders: %v%s", id, rerr, stderr.said())
	}
	return files, nil
}

// tail keeps the last max bytes written to it (a remote command's stderr).
type tail struct {
	max int
	buf bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tail) said() string {
	s := strings.TrimSpace(t.buf.String())
	if s == "" {
		return ""
	}
	return ": " + clipReason(s)
}

// Lister is the cluster's API as a Lister of a job's pods (PodNode's), through client-go:
// what a pod's benchctl reads of the other pods, read from a workstation.
func (c Cluster) Lister() (Lister, error) {
	cl, err := c.connect()
	if err != nil {
		return nil, err
	}
	return clientLister{cl}, nil
}

type clientLister struct{ cl client }

func (l clientLister) JobPods(ctx context.Context, namespace, job string) ([]Pod, error) {
	list := &corev1.PodList{}
	if err := l.cl.api.pods(namespace).list(ctx, metav1.ListOptions{LabelSelector: LabelJob + "=" + job + "," + LabelRole + " notin (collector)"}, list); err != nil {
		return nil, l.cl.told("listing the pods of job "+job, err)
	}
	var out []Pod
	for _, p := range list.Items {
		reason := ""
		if p.Status.Phase == corev1.PodPending {
			reason = pendingReason(p)
		}
		out = append(out, Pod{Name: p.Name, Index: podIndex(p), Node: p.Spec.NodeName, IP: p.Status.PodIP, Phase: string(p.Status.Phase), Reason: reason})
	}
	return out, nil
}

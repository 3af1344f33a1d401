package kubernetes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// The variables a pod of a benchctl Job is given (Render), and Kubernetes' own.
const (
	EnvJob       = "BENCHCTL_K8S_JOB"
	EnvNodes     = "BENCHCTL_K8S_NODES"
	EnvNamespace = "BENCHCTL_K8S_NAMESPACE"
	EnvPod       = "BENCHCTL_K8S_POD"
	EnvNode      = "BENCHCTL_K8S_NODE"
	EnvPodIP     = "BENCHCTL_K8S_POD_IP"
	EnvPending   = "BENCHCTL_K8S_PENDING" // how long to wait for the other pods' addresses
	EnvIndex     = "JOB_COMPLETION_INDEX" // an Indexed Job's, set by Kubernetes
)

// saDir is where Kubernetes mounts a pod's service account token and the cluster's CA.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Pod is one pod of a job as the API lists it.
type Pod struct {
	Name   string
	Index  int // its completion index; -1 when it has none
	Node   string
	IP     string
	Phase  string // Pending, Running, Succeeded, Failed
	Reason string // why it is not running: the scheduler's or the kubelet's words
}

// Lister lists a job's pods (the in-cluster API, or a test's).
type Lister interface {
	JobPods(ctx context.Context, namespace, job string) ([]Pod, error)
}

// API is the cluster's API as a pod reaches it: its service account's token and the
// cluster's CA, at KUBERNETES_SERVICE_HOST and _PORT. It reads pods, nothing more (the
// job's Role allows nothing more).
type API struct {
	Base  string // https://host:port
	Token string
	HTTP  *http.Client
}

// InCluster is the API as this pod reaches it.
func InCluster(lookup scheduler.Lookup) (*API, error) {
	host, _ := lookup("KUBERNETES_SERVICE_HOST")
	port, _ := lookup("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, &scheduler.ContextError{Var: "KUBERNETES_SERVICE_HOST", Msg: "is not set: this is not a pod of a Kubernetes cluster"}
	}
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return nil, fmt.Errorf("the pod's service account token: %w (the job's pods need one: automountServiceAccountToken)", err)
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return nil, fmt.Errorf("the cluster's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("the cluster's CA (" + saDir + "/ca.crt) holds no certificate")
	}
	return &API{Base: "https://" + net.JoinHostPort(host, port), Token: strings.TrimSpace(string(token)),
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}, nil
}

// maxList bounds a list of pods read from the API (a job of 100,000 pods is about 1 GB of
// JSON as the API writes it, with the fields benchctl never reads; it asks for fewer).
const maxList = 64 << 20

// JobPods lists job's pods in namespace.
func (a *API) JobPods(ctx context.Context, namespace, job string) ([]Pod, error) {
	u := a.Base + "/api/v1/namespaces/" + url.PathEscape(namespace) + "/pods?labelSelector=" + url.QueryEscape(LabelJob+"="+job)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Accept", "application/json")
	res, err := a.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing the job's pods: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxList+1))
	if err != nil {
		return nil, fmt.Errorf("listing the job's pods: %w", err)
	}
	if len(body) > maxList {
		return nil, fmt.Errorf("listing the job's pods: the API's answer is longer than %d bytes", maxList)
	}
	if res.StatusCode != http.StatusOK {
		var st struct{ Message string }
		_ = json.Unmarshal(body, &st)
		return nil, fmt.Errorf("listing the job's pods: the API said %s: %.300s (the job's Role lets its service account get, list and watch pods)", res.Status, st.Message)
	}
	return parsePods(body)
}

// parsePods reads a PodList: each pod's name, completion index, node, IP, phase and why
// it waits.
func parsePods(body []byte) ([]Pod, error) {
	var list struct {
		Items []struct {
			Metadata struct {
				Name        string
				Annotations map[string]string
				Labels      map[string]string
			}
			Spec struct {
				NodeName string
			}
			Status struct {
				Phase             string
				PodIP             string
				Reason, Message   string
				Conditions        []struct{ Type, Status, Reason, Message string }
				ContainerStatuses []struct {
					State struct {
						Waiting *struct{ Reason, Message string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("the API's list of pods: %w", err)
	}
	out := make([]Pod, 0, len(list.Items))
	for _, it := range list.Items {
		p := Pod{Name: it.Metadata.Name, Index: -1, Node: it.Spec.NodeName, IP: it.Status.PodIP, Phase: it.Status.Phase}
		idx := it.Metadata.Annotations["batch.kubernetes.io/job-completion-index"]
		if idx == "" {
			idx = it.Metadata.Labels["batch.kubernetes.io/job-completion-index"]
		}
		if n, err := strconv.Atoi(idx); err == nil && n >= 0 {
			p.Index = n
		}
		p.Reason = strings.TrimSpace(it.Status.Reason + " " + it.Status.Message)
		for _, c := range it.Status.Conditions {
			if c.Type == "PodScheduled" && c.Status == "False" {
				p.Reason = strings.TrimSpace(c.Reason + ": " + c.Message)
			}
		}
		for _, cs := range it.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				p.Reason = strings.TrimSpace(w.Reason + ": " + w.Message)
			}
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// DefaultPending is how long a pod waits for the others' addresses when EnvPending is unset.
const DefaultPending = 10 * time.Minute

// PodNode is the node context of this pod of a benchctl Job: its rank is its completion
// index, its world the Job's completions, its host its address; the hosts in rank order
// are the pods' IPs (their nodes' with the host network), which it waits for through the
// API (every pod of the job scheduled and given an address, EnvPending at most); rank 0's
// is the master's. A pod that failed, or is still pending when the wait ends, is named
// with the cluster's reason.
func PodNode(ctx context.Context, lookup scheduler.Lookup, api Lister, poll time.Duration) (scheduler.Node, error) {
	get := func(name string) (string, error) {
		v, ok := lookup(name)
		if !ok || strings.TrimSpace(v) == "" {
			return "", &scheduler.ContextError{Var: name, Msg: "is not set: benchctl's Kubernetes Job sets it in every pod"}
		}
		return strings.TrimSpace(v), nil
	}
	var n scheduler.Node
	vals := map[string]string{}
	for _, k := range []string{EnvJob, EnvNodes, EnvIndex, EnvNamespace, EnvNode, EnvPodIP} {
		v, err := get(k)
		if err != nil {
			return n, err
		}
		vals[k] = v
	}
	world, err := strconv.Atoi(vals[EnvNodes])
	if err != nil || world < 1 || world > MaxNodes {
		return n, &scheduler.ContextError{Var: EnvNodes, Msg: fmt.Sprintf("%q is not a node count from 1 to %d", vals[EnvNodes], MaxNodes)}
	}
	rank, err := strconv.Atoi(vals[EnvIndex])
	if err != nil || rank < 0 || rank >= world {
		return n, &scheduler.ContextError{Var: EnvIndex, Msg: fmt.Sprintf("%q is not a rank of a job of %d nodes", vals[EnvIndex], world)}
	}
	wait := DefaultPending
	if v, ok := lookup(EnvPending); ok && v != "" {
		if wait, err = time.ParseDuration(v); err != nil || wait <= 0 {
			return n, &scheduler.ContextError{Var: EnvPending, Msg: fmt.Sprintf("%q is not a duration such as 10m", v)}
		}
	}
	// The hosts are addresses (a cluster's node names need not resolve: no cluster DNS is
	// assumed), this one's own among them.
	pod, _ := lookup(EnvPod)
	n = scheduler.Node{JobID: vals[EnvJob], Rank: rank, World: world, Host: vals[EnvPodIP], Source: jobdir.SourceKubernetes,
		Placement: jobdir.Placement{Scheduler: jobdir.SourceKubernetes, Namespace: vals[EnvNamespace], Pod: strings.TrimSpace(pod), Node: vals[EnvNode]}}
	if world == 1 {
		n.Hosts, n.MasterAddr = []string{vals[EnvPodIP]}, vals[EnvPodIP]
		return n, nil
	}
	deadline := time.Now().Add(wait)
	for {
		pods, err := api.JobPods(ctx, vals[EnvNamespace], vals[EnvJob])
		if err == nil {
			hosts, missing, failed := addresses(pods, world)
			switch {
			case failed != "":
				return n, fmt.Errorf("kubernetes: %s", failed)
			case len(missing) == 0:
				n.Hosts, n.MasterAddr = hosts, hosts[0]
				return n, nil
			case time.Now().After(deadline):
				return n, fmt.Errorf("kubernetes: after %s, %s (%s sets the wait)", wait, strings.Join(missing, "; "), EnvPending)
			}
		} else if time.Now().After(deadline) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// addresses are the pods' IPs in rank order, what keeps each missing one (its reason), or
// the pod that failed.
func addresses(pods []Pod, world int) (hosts, missing []string, failed string) {
	hosts = make([]string, world)
	for _, p := range pods {
		if p.Index < 0 || p.Index >= world {
			continue
		}
		if p.Phase == "Failed" {
			return nil, nil, fmt.Sprintf("rank %d's pod %s failed: %s", p.Index, p.Name, orNone(p.Reason))
		}
		if p.IP != "" && hosts[p.Index] == "" {
			hosts[p.Index] = p.IP
		}
	}
	byIndex := map[int]Pod{}
	for _, p := range pods {
		byIndex[p.Index] = p
	}
	for i, h := range hosts {
		if h != "" {
			continue
		}
		if len(missing) == 5 {
			missing = append(missing, "and more")
			break
		}
		if p, ok := byIndex[i]; ok {
			missing = append(missing, fmt.Sprintf("rank %d's pod %s is %s without an address: %s", i, p.Name, orNone(p.Phase), orNone(p.Reason)))
		} else {
			missing = append(missing, fmt.Sprintf("rank %d has no pod (deleted, or not made yet)", i))
		}
	}
	return hosts, missing, ""
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest/document"
)

// Cluster is a cluster as a workstation reaches it: client-go, from the kubeconfig as
// kubectl finds it ($KUBECONFIG, ~/.kube/config), else the API of the pod it runs in.
type Cluster struct {
	// Kubeconfig is a kubeconfig file (--kubeconfig); "": as kubectl finds one.
	Kubeconfig string
	// Namespace is where the jobs are (--namespace); "": the kubeconfig context's, else
	// "default".
	Namespace string
	// Timeout bounds each request (0: 30 s).
	Timeout time.Duration
}

// ErrNoCluster is connect's error when no kubeconfig is found and this is not a pod: there
// is no cluster to ask.
var ErrNoCluster = errors.New("kubernetes: no cluster: no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a pod")

// client is a connection's API clients, the namespace its jobs are in, and the API server.
type client struct {
	api  kube
	ns   string
	host string
	rc   *rest.Config
}

// connect makes the cluster's client. A kubeconfig that cannot be read or names no
// usable context is bad input (exit 4); none at all is ErrNoCluster.
func (c Cluster) connect() (client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.Kubeconfig != "" {
		rules.ExplicitPath = c.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) && c.Kubeconfig == "" {
			return client{}, ErrNoCluster
		}
		return client{}, exitcode.Usagef("give --kubeconfig FILE, or check the file with 'kubectl config view'",
			"kubernetes: the kubeconfig: %s", document.Clip(err.Error()))
	}
	rc.Timeout = c.Timeout
	if rc.Timeout <= 0 {
		rc.Timeout = 30 * time.Second
	}
	rc.UserAgent = "benchctl"
	ns := c.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	api, err := newKube(rc)
	if err != nil {
		return client{}, exitcode.Usagef("check the kubeconfig with 'kubectl config view'", "kubernetes: the kubeconfig: %s", document.Clip(err.Error()))
	}
	return client{api: api, ns: ns, host: rc.Host, rc: rc}, nil
}

// Told is what asking the cluster about what said, for a person: the API's own words
// (clipped), and what to do. A refusal of what the user gave (a namespace that does not
// exist, no permission, an object the API finds invalid) is bad input, exit 4; a cluster
// that cannot be reached or fails is exit 1.
func (cl client) told(what string, err error) error {
	if err == nil {
		return nil
	}
	msg := document.Clip(err.Error())
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err) && strings.Contains(err.Error(), "namespaces"):
		return exitcode.Usagef("create it (kubectl create namespace "+cl.ns+") or give --namespace",
			"kubernetes: %s: the namespace %s does not exist", what, document.Quote(cl.ns))
	case apierrors.IsForbidden(err):
		return exitcode.Usagef("ask the cluster's administrators for a role that allows it in namespace "+cl.ns+" (docs/kubernetes.md lists what benchctl needs)",
			"kubernetes: %s: not allowed: %s", what, msg)
	case apierrors.IsUnauthorized(err):
		return exitcode.Usagef("renew the kubeconfig's credentials (kubectl get pods says the same)", "kubernetes: %s: the cluster does not accept the kubeconfig's credentials: %s", what, msg)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return exitcode.Usagef("see the manifest's kubernetes: block (docs/kubernetes.md)", "kubernetes: %s: the API refused it: %s", what, msg)
	case errors.As(err, &status):
		return fmt.Errorf("kubernetes: %s: the API server at %s: %s", what, cl.host, msg)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kubernetes: %s: cannot reach the API server at %s: %s (is the cluster up? kubectl cluster-info)", what, cl.host, msg)
	}
	return fmt.Errorf("kubernetes: %s: %s", what, msg)
}

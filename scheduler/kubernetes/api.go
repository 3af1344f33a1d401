package kubernetes

import (
	"context"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// The API groups benchctl asks about, in a scheme of its own, made when a command first
// asks the cluster: client-go's generated clientset registers every group there is (about
// fifty) when the binary starts, 8-10 ms of every benchctl command, `benchctl run` on every
// node of every scheduler included; these three take 1 ms, paid only by the commands that
// talk to a cluster.
var apiScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the groups' own registrations: a programming error
		}
	}
	// Status (the API's errors), the list and delete options.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
})

var (
	apiCodecs      = sync.OnceValue(func() serializer.CodecFactory { return serializer.NewCodecFactory(apiScheme()) })
	parameterCodec = sync.OnceValue(func() runtime.ParameterCodec { return runtime.NewParameterCodec(apiScheme()) })
)

// kube is the part of the Kubernetes API benchctl uses: the core, batch and RBAC groups'
// REST clients.
type kube struct{ core, batch, rbac *rest.RESTClient }

// newKube makes the REST clients of the cluster rc reaches.
func newKube(rc *rest.Config) (kube, error) {
	var k kube
	for _, g := range []struct {
		to   **rest.RESTClient
		gv   schema.GroupVersion
		path string
	}{
		{&k.core, corev1.SchemeGroupVersion, "/api"},
		{&k.batch, batchv1.SchemeGroupVersion, "/apis"},
		{&k.rbac, rbacv1.SchemeGroupVersion, "/apis"},
	} {
		c := rest.CopyConfig(rc)
		c.GroupVersion, c.APIPath = &g.gv, g.path
		c.NegotiatedSerializer = apiCodecs().WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			return kube{}, err
		}
		*g.to = rc
	}
	return k, nil
}

// objects are the objects of one resource in a namespace ("": a resource of the cluster).
type objects struct {
	rc       *rest.RESTClient
	ns, name string
}

func (k kube) pods(ns string) objects            { return objects{k.core, ns, "pods"} }
func (k kube) nodes() objects                    { return objects{k.core, "", "nodes"} }
func (k kube) secrets(ns string) objects         { return objects{k.core, ns, "secrets"} }
func (k kube) configMaps(ns string) objects      { return objects{k.core, ns, "configmaps"} }
func (k kube) serviceAccounts(ns string) objects { return objects{k.core, ns, "serviceaccounts"} }
func (k kube) jobs(ns string) objects            { return objects{k.batch, ns, "jobs"} }
func (k kube) roles(ns string) objects           { return objects{k.rbac, ns, "roles"} }
func (k kube) roleBindings(ns string) objects    { return objects{k.rbac, ns, "rolebindings"} }

func (o objects) req(r *rest.Request) *rest.Request {
	if o.ns != "" {
		r = r.Namespace(o.ns)
	}
	return r.Resource(o.name)
}

// get reads the object called name into into.
func (o objects) get(ctx context.Context, name string, into runtime.Object) error {
	return o.req(o.rc.Get()).Name(name).Do(ctx).Into(into)
}

// list reads the objects opts selects into into (a list).
func (o objects) list(ctx context.Context, opts metav1.ListOptions, into runtime.Object) error {
	return o.req(o.rc.Get()).VersionedParams(&opts, parameterCodec()).Do(ctx).Into(into)
}

// create makes obj; what the API made is read into into (nil: not read).
func (o objects) create(ctx context.Context, obj, into runtime.Object) error {
	res := o.req(o.rc.Post()).Body(obj).Do(ctx)
	if into == nil {
		return res.Error()
	}
	return res.Into(into)
}

// delete deletes the object called name.
func (o objects) delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return o.req(o.rc.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

// patch patches the object called name with a merge patch.
func (o objects) patch(ctx context.Context, name string, data []byte) error {
	return o.req(o.rc.Patch(types.MergePatchType)).Name(name).Body(data).Do(ctx).Error()
}

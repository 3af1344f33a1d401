package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	kblock "github.com/benchctl/benchctl/manifest/kubernetes"
	"github.com/benchctl/benchctl/scheduler"
)

// Submitter is Kubernetes as a scheduler.Submitter: a job is the objects Render makes,
// created through the API of Cluster; its options are the command line's Overrides, then
// the manifest's kubernetes: block.
type Submitter struct {
	Scheduler
	Overrides Overrides
	// Now and ID make a job's id (tests); nil: the clock and crypto/rand.
	Now func() time.Time
}

// Overrides are submit's flags for Kubernetes; a nil field was not given.
type Overrides struct {
	Nodes *int
}

var _ scheduler.Submitter = Submitter{}

// NewID is a job id: the time of the submission and 4 random hexadecimal digits
// ("k8s-20261128-204435-a1b2"), which sort by time and name the Job (a DNS label).
func NewID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return "k8s-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// IsID reports whether id is one NewID makes: the jobs this scheduler can know.
func IsID(id string) bool {
	return strings.HasPrefix(id, "k8s-") && kblock.Label(Name(id))
}

// request is the render request of a submission, checked: what the cluster could not
// run is bad input, exit 4, said before anything is asked of it.
func (s Submitter) request(sub scheduler.Submission, id, secret string) (Request, error) {
	m := sub.Manifest
	bad := func(hint, format string, a ...any) (Request, error) {
		return Request{}, exitcode.Usagef(hint, "kubernetes: "+format, a...)
	}
	switch {
	case len(sub.Tags) > 0:
		return bad("give the catalog's models in a manifest (models: {catalog, tags}) whose image names a registry", "--tags runs a MAD checkout's folder on the nodes, which pods do not have")
	case sub.ToolsFile != "":
		return bad("name built-in tools with --tools", "--tools-file is a file of this machine, which the pods do not have")
	case sub.Record != "":
		return bad("give the pushed image's ref as image.ref (benchctl build --push prints it)", "--record pins an image by a file of this machine; the pods pull image.ref")
	case sub.Engine != "" || sub.Runtime != "" && sub.Runtime != manifest.RuntimeProcess:
		return bad("leave out --engine and --runtime", "the pods run the benchmarks as processes in the image (runtime process)")
	}
	image, err := jobImage(m, sub.Selected)
	if err != nil {
		return Request{}, err
	}
	body, err := os.ReadFile(m.Path)
	if err != nil {
		return Request{}, fmt.Errorf("kubernetes: reading the manifest for the job's ConfigMap: %w", err)
	}
	if len(body) > 900<<10 {
		return bad("keep the manifest under 900 KiB (a ConfigMap holds at most 1 MiB)", "the manifest %s is %s", m.Path, manifest.FormatBytes(int64(len(body))))
	}
	b := m.Kubernetes
	if s.Cluster != nil && s.Cluster.Namespace != "" {
		b.Namespace = s.Cluster.Namespace
	}
	if b.ResultsClaim == "" && b.ResultsHostPath == "" {
		return bad("name the ReadWriteMany claim the pods write to (kubernetes.resultsClaim), or a folder every node has (kubernetes.resultsHostPath)",
			"the pods need a results volume")
	}
	nodes := 1
	if m.Experiment != nil {
		nodes = max(nodes, m.Experiment.MaxNodes())
	}
	if s.Overrides.Nodes != nil {
		nodes = *s.Overrides.Nodes
	}
	if m.Experiment != nil && nodes < m.Experiment.MaxNodes() {
		return bad("give --nodes "+fmt.Sprint(m.Experiment.MaxNodes()), "%d nodes: the experiment's largest variant needs %d", nodes, m.Experiment.MaxNodes())
	}
	args := []string{}
	if len(sub.Benchmarks) > 0 {
		args = append(args, "--benchmarks", strings.Join(sub.Benchmarks, ","))
	}
	if sub.ToolsSet {
		args = append(args, "--tools", strings.Join(sub.Tools, ","))
	}
	env, secrets := podVars(m, body, os.Environ())
	r := Request{Job: id, Nodes: nodes, Image: image, Manifest: body, ManifestName: "manifest" + strings.ToLower(filepath.Ext(m.Path)),
		Secret: secret, Vendor: m.GPU.Vendor, GPUs: scheduler.GPUsNeeded(m.GPU, sub.Selected), Block: b, RunArgs: args,
		Env: env, Secrets: secrets}
	if _, err := Render(r); err != nil {
		return Request{}, exitcode.Usagef("see the manifest's kubernetes: block (docs/kubernetes.md)", "%v", err)
	}
	return r, nil
}

// varRef is a ${VAR} in a manifest's text.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

// podLocal are variables a pod has of its own, which the submitting machine's must not
// replace.
var podLocal = map[string]bool{"PATH": true, "HOME": true, "HOSTNAME": true, "PWD": true, "OLDPWD": true, "SHLVL": true,
	"TMPDIR": true, "USER": true, "LOGNAME": true, "SHELL": true, "TERM": true, "_": true, "KUBECONFIG": true}

// podVars are the variables of this machine's environment (environ) that the pods must
// have for the manifest to read there as it read here, as Slurm's nodes inherit sbatch's:
// those it names (${VAR}), those its passEnv globs match, and its secrets, apart (they go
// into the job's Secret). benchctl's own and a pod's own are never passed.
func podVars(m *manifest.Manifest, body []byte, environ []string) (env, secrets map[string]string) {
	vals := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vals[k] = v
		}
	}
	pass := func(k string) bool { return !podLocal[k] && !strings.HasPrefix(k, "BENCHCTL_") }
	env, secrets = map[string]string{}, map[string]string{}
	for _, k := range m.Secrets {
		if v, ok := vals[k]; ok && pass(k) {
			secrets[k] = v
		}
	}
	add := func(k string) {
		if v, ok := vals[k]; ok && pass(k) && !slices.Contains(m.Secrets, k) {
			env[k] = v
		}
	}
	for _, sub := range varRef.FindAllSubmatch(body, -1) {
		add(string(sub[1]))
	}
	for k := range vals {
		for _, g := range m.PassEnv {
			if ok, _ := path.Match(g, k); ok {
				add(k)
			}
		}
	}
	return env, secrets
}

// jobImage is the one image every selected benchmark runs in (a pod is one container):
// an image.ref, which the kubelets pull.
func jobImage(m *manifest.Manifest, selected []manifest.Benchmark) (string, error) {
	image := ""
	for _, b := range selected {
		im := m.Image
		if b.Image != nil {
			im = *b.Image
		}
		if im.Ref == "" {
			return "", exitcode.Usagef("push the image (benchctl build --push) and give its ref as image.ref",
				"kubernetes: benchmark %s builds its image (%s); the kubelets pull an image from a registry", b.Name, im.String())
		}
		if image != "" && im.Ref != image {
			return "", exitcode.Usagef("submit those benchmarks as jobs of their own (--benchmarks)",
				"kubernetes: benchmark %s runs in %s, another in %s; each pod runs every benchmark in one image", b.Name, im.Ref, image)
		}
		image = im.Ref
	}
	if image == "" {
		return "", exitcode.Usagef("select a benchmark (--benchmarks)", "kubernetes: no benchmark selected")
	}
	return image, nil
}

// DryRunDocument is what submit --dry-run -o json prints: the objects as YAML.
type DryRunDocument struct {
	Namespace string `json:"namespace"`
	YAML      string `json:"yaml"`
}

// DryRun is the objects Submit would make, as YAML, the secret's value hidden; it asks
// the cluster nothing but the kubeconfig's namespace.
func (s Submitter) DryRun(sub scheduler.Submission) (scheduler.Plan, error) {
	r, err := s.request(sub, s.newID(), strings.Repeat("0", 64))
	if err != nil {
		return scheduler.Plan{}, err
	}
	if r.Block.Namespace == "" {
		r.Block.Namespace = "default"
		if cl, err := s.cluster().connect(); err == nil {
			r.Block.Namespace = cl.ns
		}
	}
	o, err := Render(r)
	if err != nil {
		return scheduler.Plan{}, err
	}
	y, err := o.YAML()
	if err != nil {
		return scheduler.Plan{}, err
	}
	return scheduler.Plan{Text: string(y), Document: DryRunDocument{Namespace: r.Block.Namespace, YAML: string(y)}}, nil
}

func (s Submitter) newID() string {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return NewID(now())
}

func (s Scheduler) cluster() Cluster {
	if s.Cluster != nil {
		return *s.Cluster
	}
	return Cluster{}
}

// Submit makes the job's objects (Render) through the API, the Job last, and makes the
// Job their owner, so that deleting the Job deletes them. A refusal deletes what was made.
func (s Submitter) Submit(ctx context.Context, sub scheduler.Submission) (scheduler.Submitted, error) {
	cl, err := s.cluster().connect()
	if errors.Is(err, ErrNoCluster) {
		return scheduler.Submitted{}, exitcode.Usagef("give --kubeconfig FILE or set KUBECONFIG", "%v", err)
	}
	if err != nil {
		return scheduler.Submitted{}, err
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return scheduler.Submitted{}, err
	}
	r, err := s.request(sub, s.newID(), hex.EncodeToString(key[:]))
	if err != nil {
		return scheduler.Submitted{}, err
	}
	if r.Block.Namespace == "" {
		r.Block.Namespace = cl.ns
	}
	cl.ns = r.Block.Namespace
	o, err := Render(r)
	if err != nil {
		return scheduler.Submitted{}, exitcode.Usagef("see the manifest's kubernetes: block (docs/kubernetes.md)", "%v", err)
	}
	if err := cl.offersGPUs(ctx, r); err != nil {
		return scheduler.Submitted{}, err
	}
	made, err := cl.create(ctx, o)
	if err != nil {
		if rerr := cl.removeNamed(context.WithoutCancel(ctx), o.Job.Name, made); rerr != nil {
			slog.Warn("kubernetes: could not delete what the refused submission made", "err", rerr)
		}
		return scheduler.Submitted{}, err
	}
	return scheduler.Submitted{Job: r.Job, Nodes: r.Nodes, Request: "job.batch/" + o.Job.Name + " in namespace " + cl.ns}, nil
}

// offersGPUs checks that some node offers a pod's GPUs (a resource no node has would keep
// the pods pending for ever). Nodes the submitter may not list are not checked.
func (cl client) offersGPUs(ctx context.Context, r Request) error {
	res := r.Block.GPUResourceOf(r.Vendor)
	if r.GPUs == 0 || res == "" {
		return nil
	}
	nodes := &corev1.NodeList{}
	err := cl.api.nodes().list(ctx, metav1.ListOptions{}, nodes)
	if apierrors.IsForbidden(err) {
		slog.Info("kubernetes: not allowed to list the nodes; not checking that one offers the GPUs", "resource", res)
		return nil
	}
	if err != nil {
		return cl.told("listing the nodes", err)
	}
	most := int64(0)
	for _, n := range nodes.Items {
		if q, ok := n.Status.Allocatable[corev1.ResourceName(res)]; ok {
			most = max(most, q.Value())
		}
	}
	if most < int64(r.GPUs) {
		return exitcode.Usagef("set kubernetes.gpuResource to the resource the nodes offer (kubectl describe nodes), or gpu.count",
			"kubernetes: each pod asks for %d %s, and the most any of the cluster's %d nodes offers is %d", r.GPUs, res, len(nodes.Items), most)
	}
	return nil
}

// create makes the objects in order, the Job last, and then makes the Job their owner.
// It returns what it made (for remove, when it fails).
func (cl client) create(ctx context.Context, o Objects) (made []string, err error) {
	a := cl.api
	step := func(kind string, f func() error) error {
		if err := f(); err != nil {
			return cl.told("creating the "+kind, err)
		}
		made = append(made, kind)
		return nil
	}
	if o.ServiceAccount != nil {
		if err := step("serviceaccount", func() error {
			return a.serviceAccounts(cl.ns).create(ctx, o.ServiceAccount, nil)
		}); err != nil {
			return made, err
		}
	}
	for _, s := range []struct {
		kind string
		f    func() error
	}{
		{"role", func() error {
			return a.roles(cl.ns).create(ctx, o.Role, nil)
		}},
		{"rolebinding", func() error {
			return a.roleBindings(cl.ns).create(ctx, o.RoleBinding, nil)
		}},
		{"secret", func() error {
			return a.secrets(cl.ns).create(ctx, o.Secret, nil)
		}},
		{"configmap", func() error {
			return a.configMaps(cl.ns).create(ctx, o.ConfigMap, nil)
		}},
	} {
		if err := step(s.kind, s.f); err != nil {
			return made, err
		}
	}
	job := &batchv1.Job{}
	if err := step("job", func() error {
		return a.jobs(cl.ns).create(ctx, o.Job, job)
	}); err != nil {
		return made, err
	}
	// The Job owns the rest: deleting it (cancel, or the cluster's clean-up) deletes them.
	owner := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":%q,"uid":%q,"blockOwnerDeletion":false}]}}`, job.Name, job.UID)
	for _, kind := range made[:len(made)-1] {
		if err := cl.patch(ctx, kind, job.Name, []byte(owner)); err != nil {
			slog.Warn("kubernetes: the Job could not be made the owner of its "+kind+"; 'benchctl cancel' deletes it", "err", err)
		}
	}
	return made, nil
}

func (cl client) patch(ctx context.Context, kind, name string, p []byte) error {
	return cl.objectsOf(kind).patch(ctx, name, p)
}

// objectsOf are the namespace's objects of a kind benchctl makes (allKinds).
func (cl client) objectsOf(kind string) objects {
	a := cl.api
	switch kind {
	case "serviceaccount":
		return a.serviceAccounts(cl.ns)
	case "role":
		return a.roles(cl.ns)
	case "rolebinding":
		return a.roleBindings(cl.ns)
	case "secret":
		return a.secrets(cl.ns)
	case "configmap":
		return a.configMaps(cl.ns)
	case "job":
		return a.jobs(cl.ns)
	}
	panic("kubernetes: no kind " + kind) // allKinds are the only ones asked for
}

// removeNamed deletes the objects called name of these kinds (what create made, or all of
// them), last made first, the Job's pods with it; one already gone is not an error.
func (cl client) removeNamed(ctx context.Context, name string, kinds []string) error {
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	for i := len(kinds) - 1; i >= 0; i-- {
		if err := cl.objectsOf(kinds[i]).delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, cl.told("deleting the "+kinds[i], err))
		}
	}
	return errors.Join(errs...)
}

// allKinds are every kind of object a job has, in the order they are made.
var allKinds = []string{"serviceaccount", "role", "rolebinding", "secret", "configmap", "job"}

// Prune deletes the Secret of every benchctl job of the namespace that has ended: the job
// secret is of no use once its pods are gone. The Jobs stay (jobs and collect read them).
func (s Submitter) Prune(ctx context.Context, _ jobdir.Layout, _ time.Time) (int, error) {
	cl, err := s.cluster().connect()
	if err != nil {
		return 0, nil // Submit says why
	}
	jobs := &batchv1.JobList{}
	if err := cl.api.jobs(cl.ns).list(ctx, metav1.ListOptions{LabelSelector: LabelJob}, jobs); err != nil {
		return 0, cl.told("listing the benchctl jobs", err)
	}
	n := 0
	for _, j := range jobs.Items {
		if st := jobState(&j, nil); st.Active {
			continue
		}
		err := cl.api.secrets(cl.ns).delete(ctx, j.Name, metav1.DeleteOptions{})
		if err == nil {
			n++
		} else if !apierrors.IsNotFound(err) {
			return n, cl.told("deleting the secret of job "+j.Labels[LabelJob], err)
		}
	}
	return n, nil
}

// JobState is what the API says of a job: its Job's conditions and its pods; a job it does
// not have (another scheduler's id, a Job deleted) or no cluster at all is the zero state.
func (s Scheduler) JobState(ctx context.Context, id string) (jobdir.SchedulerState, error) {
	if s.Cluster == nil || !IsID(id) {
		return jobdir.SchedulerState{}, nil
	}
	cl, err := s.Cluster.connect()
	if errors.Is(err, ErrNoCluster) {
		return jobdir.SchedulerState{}, nil
	}
	if err != nil {
		return jobdir.SchedulerState{}, err
	}
	return cl.state(ctx, id)
}

func (cl client) state(ctx context.Context, id string) (jobdir.SchedulerState, error) {
	job, pods, err := cl.read(ctx, id)
	if job == nil || err != nil {
		return jobdir.SchedulerState{}, err
	}
	return jobState(job, pods), nil
}

// read is a job's Job and pods; a Job the cluster does not have is nil and no error.
func (cl client) read(ctx context.Context, id string) (*batchv1.Job, []corev1.Pod, error) {
	job := &batchv1.Job{}
	err := cl.api.jobs(cl.ns).get(ctx, Name(id), job)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, cl.told("reading job "+id, err)
	}
	pods := &corev1.PodList{}
	if err := cl.api.pods(cl.ns).list(ctx, metav1.ListOptions{LabelSelector: LabelJob + "=" + id}, pods); err != nil {
		return nil, nil, cl.told("listing the pods of job "+id, err)
	}
	return job, pods.Items, nil
}

// Wait follows the job until its Job has its verdict and its pods have ended (or it is
// gone), telling tick of each state; then its Secret is deleted (the job secret is of no
// use once its pods are gone).
func (s Scheduler) Wait(ctx context.Context, id string, tick func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error) {
	if s.Cluster == nil || !IsID(id) {
		return jobdir.SchedulerState{}, nil
	}
	cl, err := s.Cluster.connect()
	if err != nil {
		if errors.Is(err, ErrNoCluster) {
			err = nil
		}
		return jobdir.SchedulerState{}, err
	}
	poll := s.Poll
	if poll <= 0 {
		poll = time.Second
	}
	var last jobdir.SchedulerState
	for {
		job, pods, err := cl.read(ctx, id)
		var st jobdir.SchedulerState
		if job != nil {
			st = jobState(job, pods)
			if why := stuck(job, pods, time.Now()); why != "" {
				// No pod runs to end the job (each ends it when the others stay pending):
				// it is ended here, with the cluster's reason.
				if err := cl.removeNamed(context.WithoutCancel(ctx), Name(id), allKinds); err != nil {
					slog.Warn("kubernetes: could not delete the job that stayed pending", "job", id, "err", err)
				}
				st.State, st.Active = StateFailed+" ("+why+")", false
			}
		}
		if tick != nil {
			tick(st, err)
		}
		if err == nil {
			last = st
			if !st.Active {
				if err := cl.removeNamed(context.WithoutCancel(ctx), Name(id), []string{"secret"}); err != nil {
					slog.Warn("kubernetes: could not delete the job's secret", "job", id, "err", err)
				}
				return st, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// stuck says why a job whose pods have all stayed pending past their pending timeout
// (BENCHCTL_K8S_PENDING in its pods' spec) and as long again (30 s at most: a pod that runs
// ends the job itself when the others stay pending) will not start; "" while it may.
func stuck(job *batchv1.Job, pods []corev1.Pod, now time.Time) string {
	st := jobState(job, pods)
	if !strings.HasPrefix(st.State, StatePending) || job.CreationTimestamp.IsZero() {
		return ""
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending {
			return ""
		}
	}
	wait := DefaultPending
	for _, c := range job.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if d, err := time.ParseDuration(e.Value); e.Name == EnvPending && err == nil && d > 0 {
				wait = d
			}
		}
	}
	if now.Sub(job.CreationTimestamp.Time) < wait+min(wait, 30*time.Second) {
		return ""
	}
	why := "no pod was made"
	if p := pendingPods(pods); len(p) > 0 {
		why = p[0]
	}
	return fmt.Sprintf("pending for more than %s, ended: %s", wait, why)
}

// Cancel ends a job: its Job is deleted, its pods are sent SIGTERM (their grace period,
// then SIGKILL) and the objects it owns go with it. An id NewID did not make is not
// Kubernetes'; a job the cluster does not have is an input error.
func (s Scheduler) Cancel(ctx context.Context, id string) (bool, error) {
	if !IsID(id) {
		return false, nil
	}
	cl, err := s.cluster().connect()
	if errors.Is(err, ErrNoCluster) {
		return true, exitcode.Usagef("give --kubeconfig FILE or set KUBECONFIG", "%v", err)
	}
	if err != nil {
		return true, err
	}
	if err := cl.api.jobs(cl.ns).get(ctx, Name(id), &batchv1.Job{}); err != nil {
		if apierrors.IsNotFound(err) {
			return true, exitcode.Usagef("list the jobs with 'benchctl jobs', or give --namespace", "kubernetes: no job %s in namespace %s", id, cl.ns)
		}
		return true, cl.told("reading job "+id, err)
	}
	return true, cl.removeNamed(ctx, Name(id), allKinds)
}

// Package kubernetes is benchctl on a Kubernetes cluster: a job is an Indexed Job of one
// pod per node, each running `benchctl run --runtime process` in the benchmark's image
// with benchctl copied in by an init container. This file renders the objects a submission
// makes (Render): the Job, the manifest's ConfigMap, the job secret's Secret, and a service
// account allowed only to read pods; docs/kubernetes.md says what a cluster needs.
package kubernetes

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/benchctl/benchctl/manifest/kubernetes"
)

// Labels and paths of a job's objects and pods.
const (
	LabelJob  = "benchctl.io/job"        // every object of a job, and its pods
	LabelName = "app.kubernetes.io/name" // "benchctl"

	BinDir       = "/opt/benchctl"                    // benchctl and its agent, copied by the init container
	ManifestDir  = "/etc/benchctl"                    // the manifest, from the ConfigMap
	SecretPath   = "/var/run/benchctl/job.secret"     // the job secret, one file (BENCHCTL_JOB_SECRET_FILE)
	SharedDir    = "/benchctl/shared"                 // the results volume: the job folders
	TmpDir       = "/var/run/benchctl/tmp"            // TMPDIR: an image FROM scratch has no /tmp
	benchctlIn   = "/usr/local/bin/benchctl"          // in the benchctl image
	agentIn      = "/usr/local/bin/benchctl-agent"    // in the benchctl image
	DefaultImage = "ghcr.io/benchctl/benchctl:latest" // the benchctl image when the block names none
)

// Request is a job to render: its id (a DNS label), its nodes, the images, the manifest
// and secret the pods read, each node's GPUs, the block (flags merged in) and what else
// every node's `benchctl run` is handed.
type Request struct {
	Job      string
	Nodes    int
	Image    string // the benchmark's image, from a registry the kubelets pull from
	Manifest []byte // the manifest file's bytes
	// ManifestName is its name in the ConfigMap and the pods ("manifest.yaml"; "":
	// manifest.json), whose extension says how it is read.
	ManifestName string
	Secret       string // the job secret: 64 hexadecimal digits
	Vendor       string // amd, nvidia, none
	GPUs         int    // each node's GPUs (0: none asked)
	Block        kubernetes.Block
	RunArgs      []string // more of `benchctl run`'s arguments (--benchmarks, --tags, ...)
	// Env are variables every pod has, as the submitting machine had them (the manifest's
	// ${VAR} and passEnv: Slurm's nodes inherit them from sbatch); Secrets are the
	// manifest's secrets: their values go into the job's Secret, never the Job's spec.
	Env     map[string]string
	Secrets map[string]string
}

// Objects are what a submission makes, in the order it makes them (the Job last).
type Objects struct {
	ServiceAccount *corev1.ServiceAccount // nil when the block names one
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
	Secret         *corev1.Secret
	ConfigMap      *corev1.ConfigMap
	Job            *batchv1.Job
}

// MaxNodes bounds a job's pods (an Indexed Job's completions are bounded by 100,000).
const MaxNodes = 100_000

// Name is the name of a job's objects.
func Name(job string) string { return "benchctl-" + job }

// Render makes the objects of r. An error is an input the cluster would refuse, said
// before anything is asked of it.
func Render(r Request) (Objects, error) {
	switch {
	case r.Nodes < 1 || r.Nodes > MaxNodes:
		return Objects{}, fmt.Errorf("kubernetes: %d nodes: give 1 to %d", r.Nodes, MaxNodes)
	case !kubernetes.Label(Name(r.Job)):
		return Objects{}, fmt.Errorf("kubernetes: job id %q cannot name a Job (lower-case letters, digits and '-', at most 54)", r.Job)
	case r.Image == "":
		return Objects{}, errors.New("kubernetes: the benchmark needs an image the kubelets pull (image.ref, or build --push)")
	case len(r.Secret) != 64:
		return Objects{}, errors.New("kubernetes: the job secret must be 64 hexadecimal digits")
	}
	if p := r.Block.Check(); len(p) > 0 {
		return Objects{}, fmt.Errorf("kubernetes.%s: %s", p[0].Field, p[0].Msg)
	}
	gpuRes := r.Block.GPUResourceOf(r.Vendor)
	if r.GPUs > 0 && gpuRes == "" {
		return Objects{}, fmt.Errorf("kubernetes: %d GPUs a node of vendor %q: name the resource the nodes offer them as (kubernetes.gpuResource)", r.GPUs, r.Vendor)
	}
	name := Name(r.Job)
	labels := map[string]string{LabelJob: r.Job, LabelName: "benchctl"}
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: r.Block.Namespace, Labels: maps.Clone(labels)}
	}
	var o Objects
	sa := r.Block.ServiceAccount
	if sa == "" {
		sa = name
		o.ServiceAccount = &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta()}
	}
	// Each pod finds the others' addresses through the API: reading pods is all it may do.
	o.Role = &rbacv1.Role{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}
	o.RoleBinding = &rbacv1.RoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(),
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: r.Block.Namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}
	immutable := true
	o.Secret = &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: meta(), Immutable: &immutable, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{SecretKey: []byte(r.Secret + "\n")}}
	for k, v := range r.Secrets {
		o.Secret.Data[k] = []byte(v)
	}
	o.ConfigMap = &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(), Immutable: &immutable,
		Data: map[string]string{r.manifestName(): string(r.Manifest)}}
	o.Job = job(r, name, sa, labels, gpuRes)
	return o, nil
}

// SecretKey is the job secret's key in the job's Secret (the manifest's secrets are keyed
// by their names, which are variable names: never this).
const SecretKey = "job.secret"

func (r Request) manifestName() string {
	if r.ManifestName == "" {
		return "manifest.json"
	}
	return r.ManifestName
}

func typeMeta(api, kind string) metav1.TypeMeta { return metav1.TypeMeta{APIVersion: api, Kind: kind} }

// The benchctl image holds benchctl and its agent, static, and nothing else: its
// `self-copy` copies both into the pods' emptyDir.

// job is the Indexed Job: N pods, one per node (anti-affinity on the host name), none
// retried, and any pod's failure (or disruption: evicted, deleted) fails the Job at once.
func job(r Request, name, sa string, labels map[string]string, gpuRes string) *batchv1.Job {
	n := int32(r.Nodes)
	zero := int32(0)
	indexed := batchv1.IndexedCompletion
	res := corev1.ResourceList{}
	if r.Block.CPU != "" {
		res[corev1.ResourceCPU] = resource.MustParse(r.Block.CPU)
	}
	if r.Block.Memory != "" {
		res[corev1.ResourceMemory] = resource.MustParse(r.Block.Memory)
	}
	if r.GPUs > 0 {
		res[corev1.ResourceName(gpuRes)] = *resource.NewQuantity(int64(r.GPUs), resource.DecimalSI)
	}
	field := func(env, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	env := []corev1.EnvVar{
		{Name: "BENCHCTL_AGENT", Value: BinDir + "/benchctl-agent"},
		{Name: "BENCHCTL_JOB_SECRET_FILE", Value: SecretPath},
		{Name: "TMPDIR", Value: TmpDir},
		{Name: "BENCHCTL_K8S_JOB", Value: r.Job},
		{Name: "BENCHCTL_K8S_NODES", Value: strconv.Itoa(r.Nodes)},
		{Name: EnvPending, Value: r.Block.Pending().String()},
		field("BENCHCTL_K8S_NAMESPACE", "metadata.namespace"),
		field("BENCHCTL_K8S_POD", "metadata.name"),
		field("BENCHCTL_K8S_NODE", "spec.nodeName"),
		field("BENCHCTL_K8S_POD_IP", "status.podIP"),
	}
	for _, k := range slices.Sorted(maps.Keys(r.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: r.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(r.Secrets)) {
		env = append(env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: k}}})
	}
	readOnly := int32(0o400)
	results := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: r.Block.ResultsClaim}}
	if r.Block.ResultsHostPath != "" {
		t := corev1.HostPathDirectoryOrCreate
		results = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: r.Block.ResultsHostPath, Type: &t}}
	}
	benchctlImage := r.Block.BenchctlImage
	if benchctlImage == "" {
		benchctlImage = DefaultImage
	}
	pod := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		ServiceAccountName: sa,
		NodeSelector:       r.Block.NodeSelector,
		PriorityClassName:  r.Block.PriorityClass,
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelJob: r.Job}}, TopologyKey: "kubernetes.io/hostname"}}}},
		InitContainers: []corev1.Container{{Name: "benchctl", Image: benchctlImage,
			Command:      []string{benchctlIn, "self-copy", BinDir},
			VolumeMounts: []corev1.VolumeMount{{Name: "benchctl-bin", MountPath: BinDir}}}},
		Containers: []corev1.Container{{Name: "benchmark", Image: r.Image,
			Command: append([]string{BinDir + "/benchctl", "run", "--runtime", "process", "--manifest", ManifestDir + "/" + r.manifestName(), "--shared-dir", SharedDir}, r.RunArgs...),
			Env:     env, Resources: corev1.ResourceRequirements{Limits: res, Requests: maps.Clone(res)},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "benchctl-bin", MountPath: BinDir, ReadOnly: true},
				{Name: "manifest", MountPath: ManifestDir, ReadOnly: true},
				// One file (subPath), not the volume's links: benchctl refuses a secret behind a link.
				{Name: "secret", MountPath: SecretPath, SubPath: SecretKey, ReadOnly: true},
				{Name: "results", MountPath: SharedDir},
				{Name: "benchctl-tmp", MountPath: TmpDir},
			}}},
		Volumes: []corev1.Volume{
			{Name: "benchctl-bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "benchctl-tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "manifest", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: &readOnly}}},
			{Name: "results", VolumeSource: results},
		},
	}
	for _, t := range r.Block.Tolerations {
		pod.Tolerations = append(pod.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator),
			Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	if r.Block.Network != "pod" {
		pod.HostNetwork, pod.DNSPolicy = true, corev1.DNSClusterFirstWithHostNet
	}
	return &batchv1.Job{TypeMeta: typeMeta("batch/v1", "Job"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Block.Namespace, Labels: maps.Clone(labels)},
		Spec: batchv1.JobSpec{Completions: &n, Parallelism: &n, CompletionMode: &indexed, BackoffLimit: &zero,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					ContainerName: ptr("benchmark"), Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}}},
				{Action: batchv1.PodFailurePolicyActionFailJob, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
			}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)}, Spec: pod}}}
}

func ptr[T any](v T) *T { return &v }

// YAML is the objects as a YAML stream, in the order they are made: what `benchctl submit
// --scheduler kubernetes --dry-run` prints. The secret's value is never in it.
func (o Objects) YAML() ([]byte, error) {
	var out bytes.Buffer
	shown := *o.Secret
	shown.Data, shown.StringData = nil, map[string]string{}
	for k := range o.Secret.Data {
		shown.StringData[k] = "<the value of $" + k + " on the submitting machine>"
		if k == SecretKey {
			shown.StringData[k] = "<the job secret: 64 hexadecimal digits, made at submission>"
		}
	}
	var docs []any
	if o.ServiceAccount != nil {
		docs = append(docs, o.ServiceAccount)
	}
	docs = append(docs, o.Role, o.RoleBinding, &shown, o.ConfigMap, o.Job)
	for i, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

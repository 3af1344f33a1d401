package kubernetes

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
	kblock "github.com/benchctl/benchctl/manifest/kubernetes"
	"github.com/benchctl/benchctl/scheduler"
)

// k8sSubmission is a manifest file of one benchmark in a registry's image, with a results
// claim; change alters it before it is submitted.
func k8sSubmission(t *testing.T, change func(m *manifest.Manifest)) scheduler.Submission {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte("name: t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{Name: "t", Path: p, Image: manifest.Image{Ref: "registry.example:5000/bench:1"},
		GPU: manifest.GPU{Vendor: "amd", Count: 8}, Kubernetes: kblock.Block{ResultsClaim: "results", Namespace: "bench"},
		Benchmarks: []manifest.Benchmark{{Name: "a"}, {Name: "b"}}}
	if change != nil {
		change(m)
	}
	return scheduler.Submission{Manifest: m, Selected: m.Benchmarks, SharedDir: t.TempDir()}
}

// The dry run shows the objects (the secret's value hidden), with the manifest file's
// bytes under its own extension, the GPUs the benchmarks need and --nodes; it needs no
// cluster.
func TestDryRunShowsTheObjects(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	nodes := 3
	s := Submitter{Overrides: Overrides{Nodes: &nodes}, Now: func() time.Time { return time.Date(2026, 11, 28, 20, 44, 35, 0, time.UTC) }}
	plan, err := s.DryRun(k8sSubmission(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: benchctl-k8s-20261128-204435-", "namespace: bench", "completions: 3", "amd.com/gpu: \"8\"",
		"manifest.yaml: |", "/etc/benchctl/manifest.yaml", "image: registry.example:5000/bench:1", "claimName: results",
		"<the job secret: 64 hexadecimal digits, made at submission>"} {
		if !strings.Contains(plan.Text, want) {
			t.Errorf("the dry run lacks %q:\n%s", want, plan.Text)
		}
	}
	if strings.Contains(plan.Text, strings.Repeat("0", 64)) {
		t.Error("the dry run shows a secret")
	}
	if d := plan.Document.(DryRunDocument); d.Namespace != "bench" || d.YAML != plan.Text {
		t.Errorf("document: %+v", d)
	}
}

// What a cluster's pods cannot run is refused before the cluster is asked, exit 4, saying
// what and how to fix it.
func TestSubmissionsPodsCannotRun(t *testing.T) {
	zero := 0
	cases := []struct {
		name   string
		change func(*manifest.Manifest, *scheduler.Submission, *Submitter)
		want   string
	}{
		{"built image", func(m *manifest.Manifest, _ *scheduler.Submission, _ *Submitter) {
			m.Image = manifest.Image{Dockerfile: "Dockerfile"}
		}, "benchmark a builds its image (Dockerfile); the kubelets pull an image from a registry"},
		{"two images", func(m *manifest.Manifest, s *scheduler.Submission, _ *Submitter) {
			s.Selected[1].Image = &manifest.Image{Ref: "other:2"}
		}, "benchmark b runs in other:2, another in registry.example:5000/bench:1"},
		{"no results volume", func(m *manifest.Manifest, _ *scheduler.Submission, _ *Submitter) {
			m.Kubernetes.ResultsClaim = ""
		}, "the pods need a results volume"},
		{"tags", func(_ *manifest.Manifest, s *scheduler.Submission, _ *Submitter) { s.Tags = []string{"vllm"} }, "--tags runs a MAD checkout's folder"},
		{"tools file", func(_ *manifest.Manifest, s *scheduler.Submission, _ *Submitter) { s.ToolsFile = "/home/me/tools.json" }, "--tools-file is a file of this machine"},
		{"record", func(_ *manifest.Manifest, s *scheduler.Submission, _ *Submitter) { s.Record = "/home/me/build.json" }, "--record pins an image by a file of this machine"},
		{"engine", func(_ *manifest.Manifest, s *scheduler.Submission, _ *Submitter) { s.Runtime = "engine" }, "the pods run the benchmarks as processes"},
		{"no nodes", func(_ *manifest.Manifest, _ *scheduler.Submission, s *Submitter) { s.Overrides.Nodes = &zero }, "0 nodes: give 1 to 100000"},
		{"no GPU resource", func(m *manifest.Manifest, _ *scheduler.Submission, _ *Submitter) { m.GPU.Vendor = "intel" }, "name the resource the nodes offer them as (kubernetes.gpuResource)"},
		{"manifest too large", func(m *manifest.Manifest, _ *scheduler.Submission, _ *Submitter) {
			if err := os.WriteFile(m.Path, make([]byte, 1<<20), 0o644); err != nil {
				panic(err)
			}
		}, "the manifest " + "", // its path is the test's
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sub := k8sSubmission(t, nil)
			s := Submitter{}
			c.change(sub.Manifest, &sub, &s)
			_, err := s.DryRun(sub)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if exitcode.Of(err) != exitcode.Invalid {
				t.Errorf("exit %d, want %d", exitcode.Of(err), exitcode.Invalid)
			}
		})
	}
}

// A job id names a Job and sorts by time; ids of other schedulers are not asked about.
func TestJobIDs(t *testing.T) {
	id := NewID(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	if !strings.HasPrefix(id, "k8s-20260102-020405-") || !IsID(id) || len(id) != len("k8s-20260102-020405-abcd") {
		t.Errorf("id %q", id)
	}
	for _, other := range []string{"77", "77.1", "k8s-", "k8s-A", "k8s-" + strings.Repeat("a", 60), ""} {
		if IsID(other) {
			t.Errorf("%q taken for a Kubernetes job", other)
		}
	}
	var s Scheduler // no cluster: knows no job
	if st, err := s.JobState(t.Context(), id); err != nil || st.Known {
		t.Errorf("no cluster: %+v %v", st, err)
	}
	s.Cluster = &Cluster{Kubeconfig: filepath.Join(t.TempDir(), "missing")}
	if mine, err := s.Cancel(t.Context(), "77"); mine || err != nil {
		t.Errorf("cancel of a Slurm id: %v %v", mine, err)
	}
	if mine, err := s.Cancel(t.Context(), id); !mine || exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "the kubeconfig") {
		t.Errorf("cancel with a kubeconfig that is missing: %v", err)
	}
}

// What the Job's conditions and its pods say becomes the job's state, in Slurm's words,
// with the cluster's reasons.
func TestJobState(t *testing.T) {
	two := int32(2)
	job := func(conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: &two}, Status: batchv1.JobStatus{Conditions: conds}}
	}
	cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason}
	}
	pod := func(i string, phase corev1.PodPhase, st corev1.PodStatus) corev1.Pod {
		st.Phase = phase
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + i, Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: i}}, Status: st}
	}
	unschedulable := corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/2 nodes are available: 2 Insufficient amd.com/gpu.\n preemption: 0/2 nodes are available"}}}
	pulling := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "ImagePullBackOff", Message: "Back-off pulling image \"reg/x:1\": " + strings.Repeat("e", 6000)}}}}}
	cases := []struct {
		name   string
		job    *batchv1.Job
		pods   []corev1.Pod
		state  string
		active bool
	}{
		{"no pods yet", job(), nil, "PENDING", true},
		{"one unschedulable", job(), []corev1.Pod{pod("1", corev1.PodPending, unschedulable), pod("0", corev1.PodRunning, corev1.PodStatus{})},
			"PENDING (pod p1: Unschedulable: 0/2 nodes are available: 2 Insufficient amd.com/gpu. preemption: 0/2 nodes are available)", true},
		{"image pull", job(), []corev1.Pod{pod("0", corev1.PodPending, pulling), pod("1", corev1.PodRunning, corev1.PodStatus{})},
			"PENDING (pod p0: ImagePullBackOff: Back-off pulling image \"reg/x:1\": " + strings.Repeat("e", 300-len("ImagePullBackOff: Back-off pulling image \"reg/x:1\": ")) + "…)", true},
		{"running", job(), []corev1.Pod{pod("0", corev1.PodRunning, corev1.PodStatus{}), pod("1", corev1.PodRunning, corev1.PodStatus{})}, "RUNNING", true},
		{"failing", job(cond(batchv1.JobFailureTarget, "PodFailurePolicy")), nil, "COMPLETING (failing: PodFailurePolicy)", true},
		{"failed", job(cond(batchv1.JobFailureTarget, "PodFailurePolicy"), cond(batchv1.JobFailed, "PodFailurePolicy")), nil, "FAILED (PodFailurePolicy)", false},
		{"failed, the pod named", job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy",
			Message: "Container benchmark for pod default/benchctl-k8s-1-1-x2k failed with exit code 137 matching FailJob rule at index 0"}), nil,
			"FAILED (PodFailurePolicy: Container benchmark for pod default/benchctl-k8s-1-1-x2k failed with exit code 137 matching FailJob rule at index 0)", false},
		{"succeeding", job(cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached")), nil, "COMPLETING", true},
		{"complete", job(cond(batchv1.JobSuccessCriteriaMet, ""), cond(batchv1.JobComplete, "")), nil, "COMPLETED", false},
		{"suspended", job(cond(batchv1.JobSuspended, "")), nil, "SUSPENDED", true},
	}
	for _, c := range cases {
		st := jobState(c.job, c.pods)
		if st.State != c.state || st.Active != c.active || !st.Known || st.Scheduler != "Kubernetes" {
			t.Errorf("%s: %+v\nwant %q active %v", c.name, st, c.state, c.active)
		}
	}
}

// The pods get the variables the manifest reads as this machine has them (${VAR}, passEnv
// globs), as Slurm's nodes inherit sbatch's; its secrets apart (the job's Secret);
// benchctl's own, a pod's own (PATH, HOME, TMPDIR) and variables it does not name never.
func TestPodVars(t *testing.T) {
	m := &manifest.Manifest{Secrets: []string{"HF_TOKEN", "UNSET_TOKEN"}, PassEnv: []string{"NCCL_*", "*PATH"}}
	body := []byte("image: {ref: \"${IMG:-x}\"}\nenv: {T: \"${HF_TOKEN}\", P: \"${PATH}\", B: \"${BENCHCTL_X}\", U: \"${UNSET:-u}\"}\n")
	env, secrets := podVars(m, body, []string{"IMG=reg/x:1", "HF_TOKEN=hf_1", "PATH=/usr/bin", "BENCHCTL_X=1", "NCCL_DEBUG=INFO",
		"NCCL_IB_HCA=mlx5", "LD_LIBRARY_PATH=/opt/lib", "OTHER=no", "EQ=a=b"})
	if want := map[string]string{"IMG": "reg/x:1", "NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5", "LD_LIBRARY_PATH": "/opt/lib"}; !maps.Equal(env, want) {
		t.Errorf("env %v, want %v", env, want)
	}
	if want := map[string]string{"HF_TOKEN": "hf_1"}; !maps.Equal(secrets, want) {
		t.Errorf("secrets %v, want %v", secrets, want)
	}
}

// A job whose pods all stay pending past their pending timeout (and as long again, 30 s at
// most) is ended with the cluster's reason; a job with a pod at work, or within its bound,
// is left to its pods.
func TestStuckJobs(t *testing.T) {
	created := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	job.Spec.Template.Spec.Containers = []corev1.Container{{Env: []corev1.EnvVar{{Name: EnvPending, Value: "2m0s"}}}}
	pending := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p0", Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."}}}}
	running := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, c := range []struct {
		name  string
		pods  []corev1.Pod
		after time.Duration
		env   string
		want  string
	}{
		{"within the bound", []corev1.Pod{pending}, 2*time.Minute + 29*time.Second, "", ""},
		{"past it", []corev1.Pod{pending}, 2*time.Minute + 31*time.Second, "", "pending for more than 2m0s, ended: pod p0: Unschedulable: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."},
		{"a pod at work", []corev1.Pod{pending, running}, time.Hour, "", ""},
		{"no pods made", nil, time.Hour, "", "pending for more than 2m0s, ended: no pod was made"},
		{"a short bound", []corev1.Pod{pending}, 4 * time.Second, "2s", "pending for more than 2s"},
		{"a long bound: 30 s more", []corev1.Pod{pending}, time.Hour + 29*time.Second, "1h", ""},
	} {
		j := job.DeepCopy()
		if c.env != "" {
			j.Spec.Template.Spec.Containers[0].Env[0].Value = c.env
		}
		if got := stuck(j, c.pods, created.Add(c.after)); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The collector pod mounts the Job's results volume read-only, runs the Job's benchctl
// image where the Job's pods may run, with no API token; a Job without them is refused.
func TestCollectorPod(t *testing.T) {
	o, err := Render(Request{Job: "k8s-1", Nodes: 2, Image: "img", Secret: strings.Repeat("0", 64), Vendor: "none",
		Block: kblock.Block{ResultsClaim: "results", BenchctlImage: "reg/benchctl:1", NodeSelector: map[string]string{"pool": "gpu"},
			Tolerations: []kblock.Toleration{{Key: "gpu", Operator: "Exists"}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := collectorPod(o.Job.Spec.Template.Spec, "k8s-1")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Spec.Containers[0]
	if c.Image != "reg/benchctl:1" || len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].MountPath != SharedDir ||
		p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "results" || p.Spec.NodeSelector["pool"] != "gpu" || len(p.Spec.Tolerations) != 1 ||
		*p.Spec.AutomountServiceAccountToken || p.Labels[LabelJob] != "k8s-1" || p.Labels[LabelRole] != "collector" || !strings.HasPrefix(p.Name, "benchctl-k8s-1-collect-") {
		t.Errorf("collector pod: %+v", p)
	}
	if _, err := collectorPod(corev1.PodSpec{}, "k8s-1"); exitcode.Of(err) != exitcode.Invalid {
		t.Errorf("a Job benchctl did not make: %v", err)
	}
}

package tests

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/benchctl/benchctl/jobdir"
	kblock "github.com/benchctl/benchctl/manifest/kubernetes"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
	"github.com/benchctl/benchctl/scheduler/schedulertest"
	"github.com/benchctl/benchctl/tests/testbed"
)

// The objects scheduler/kubernetes renders, applied to the testbed's real cluster (an API
// server, two kubelets, containerd): the benchctl image's init container copies the static
// benchctl and its agent into the benchmark's image (busybox), each pod runs `benchctl run
// --runtime process` with the manifest from the ConfigMap and the secret as one file, and
// writes to the results volume; the pods' benchctl find each other through the API (their
// node context: scheduler/kubernetes) and run one job of 2 nodes over the job channel.

// k8sBenchctlImage pushes an image of the static benchctl and its agent, nothing else (no
// shell: its init container runs benchctl self-copy), to the cluster's registry (the
// kubelets pull it, as in production), and returns its name.
func k8sBenchctlImage(t *testing.T, tb *testbed.Testbed, k *testbed.K8s) string {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return k.PushImage(t, "benchctl/benchctl", fmt.Sprintf("e2e-%d", time.Now().UnixNano()), map[string]testbed.File{
		"usr/local/bin/benchctl":       {Mode: 0o755, Data: read(tb.BenchctlStatic(t))},
		"usr/local/bin/benchctl-agent": {Mode: 0o755, Data: read(tb.Agent(t))},
	}, nil)
}

// k8sSubmit renders a job of nodes pods running command and applies its objects; they are
// deleted when the test ends.
func k8sSubmit(t *testing.T, k *testbed.K8s, benchctlImage string, nodes int, command []string, resultsFile ...string) (job, results string) {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	job = "e2e-" + hex.EncodeToString(b[:])
	results = filepath.Join(k.Results, job)
	man, _ := json.Marshal(map[string]any{"name": "k8s-shape", "runtime": "process", "gpu": map[string]string{"vendor": "none"},
		"benchmarks": []map[string]any{{"name": "hello", "command": command, "timeout": "3m", "results": strings.Join(resultsFile, "")}}})
	var secret [32]byte
	rand.Read(secret[:])
	o, err := kubernetes.Render(kubernetes.Request{Job: job, Nodes: nodes, Image: k.Busybox, Manifest: man, Secret: hex.EncodeToString(secret[:]), Vendor: "none",
		Block: kblock.Block{ResultsHostPath: results, BenchctlImage: benchctlImage, PendingTimeout: "2m"}})
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	for _, obj := range []any{o.ServiceAccount, o.Role, o.RoleBinding, o.Secret, o.ConfigMap, o.Job} {
		y, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(append(stream, "---\n"...), y...)
	}
	t.Cleanup(func() {
		k.Kubectl(t, nil, "delete", "job,serviceaccount,role,rolebinding,secret,configmap", "-l", kubernetes.LabelJob+"="+job, "--wait=false")
		os.RemoveAll(results)
	})
	if out, err := k.Kubectl(t, stream, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	return job, results
}

// k8sDescribe logs what the cluster says of a job (for a failure's message).
func k8sDescribe(t *testing.T, k *testbed.K8s, job string) {
	t.Helper()
	out, _ := k.Kubectl(t, nil, "describe", "job,pods", "-l", kubernetes.LabelJob+"="+job)
	logs, _ := k.Kubectl(t, nil, "logs", "-l", kubernetes.LabelJob+"="+job, "--all-containers", "--prefix", "--tail", "40")
	t.Logf("the cluster says:\n%s\nlogs:\n%s", out, logs)
}

// A rendered job of 2 pods completes: one pod per kubelet, each ran benchctl in the
// benchmark's image, they met as the 2 nodes of one job, and each left its node folder in
// the job's folder on the results volume.
func TestKubernetesRenderedJobCompletes(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	job, results := k8sSubmit(t, k, k8sBenchctlImage(t, tb, k), 2,
		[]string{"sh", "-c", `printf 'model,performance,metric\nhello,%s,ops\n' "$((JOB_COMPLETION_INDEX + 10))" > "$BENCHCTL_OUTPUT_DIR/r.csv"`}, "r.csv")
	if out, err := k.Kubectl(t, nil, "wait", "--for=condition=complete", "job/"+kubernetes.Name(job), "--timeout=150s"); err != nil {
		k8sDescribe(t, k, job)
		t.Fatalf("the job did not complete: %v\n%s", err, out)
	}
	nodes, _ := k.Kubectl(t, nil, "get", "pods", "-l", kubernetes.LabelJob+"="+job, "-o", "jsonpath={.items[*].spec.nodeName}")
	if f := strings.Fields(nodes); len(f) != 2 || f[0] == f[1] {
		t.Errorf("the pods ran on %q: one per node was asked", nodes)
	}
	statuses, _ := filepath.Glob(filepath.Join(results, "jobs", "*", "nodes", "*", "status.json"))
	if len(statuses) != 2 || !strings.Contains(statuses[0], filepath.Join("jobs", job, "nodes")) {
		t.Fatalf("status files on the results volume: %v, want 2 in jobs/%s", statuses, job)
	}
	for _, p := range statuses {
		b, _ := os.ReadFile(p)
		var st struct {
			Outcome string
			World   int
		}
		if err := json.Unmarshal(b, &st); err != nil || st.Outcome != "success" || st.World != 2 {
			t.Errorf("%s: %v\n%s", p, err, b)
		}
	}
	// collect reads the job folder as for any scheduler: a row for the benchmark, its
	// deployment_type kubernetes, both nodes' results.
	rows := collectRows(t, tb, job, results)
	if len(rows) != 1 || rows[0]["deployment_type"] != "kubernetes" || rows[0]["perf_nodes"] != "2" || rows[0]["status"] != "SUCCESS" {
		t.Errorf("perf.csv: %v", rows)
	}
}

// A rank that fails fails the Job at once (its pod failure policy: no retry): submit
// --wait says so and exits 3; rank 0 was stopped by the job channel long before its own
// command would have ended, as on Slurm; rank 1's folder has its diagnostics; no pod runs
// once the Job has failed.
func TestKubernetesFailingRankFailsTheJob(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	shared := k8sShared(t, k)
	m := k8sManifest(t, k, k8sBenchctlImage(t, tb, k), shared, `if [ "$JOB_COMPLETION_INDEX" = 1 ]; then sleep 2; echo "rank 1 gives up" >&2; exit 3; fi; sleep 120`)
	start := time.Now()
	code, out, errout := benchctlRun(t, tb.Env(), "submit", "-m", m, "--scheduler", "kubernetes", "--kubeconfig", k.Kubeconfig, "--nodes", "2", "--shared-dir", shared, "--wait")
	job := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if !kubernetes.IsID(job) {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errout)
	}
	k8sCleanup(t, k, job)
	if code != 3 || !strings.Contains(errout, "FAILED (PodFailurePolicy: Container benchmark for pod default/"+kubernetes.Name(job)+"-") {
		k8sDescribe(t, k, job)
		t.Fatalf("submit --wait: exit %d, want 3\n%s\n%s", code, out, errout)
	}
	if d := time.Since(start); d > 100*time.Second {
		t.Errorf("the job took %s to fail", d)
	}
	// Rank 0 was stopped by the job channel (rank 1's failure), as on Slurm.
	if rank0, _ := filepath.Glob(filepath.Join(shared, "jobs", job, "nodes", "0-*", "status.json")); len(rank0) == 1 {
		b, _ := os.ReadFile(rank0[0])
		if !strings.Contains(string(b), "rank 1") || !strings.Contains(string(b), "failed benchmark hello") {
			t.Errorf("rank 0's status does not name rank 1's failure:\n%s", b)
		}
	} else {
		t.Errorf("rank 0's status: %v", rank0)
	}
	diag, _ := filepath.Glob(filepath.Join(shared, "jobs", job, "nodes", "1-*", "diagnostics", "hello", "*"))
	if len(diag) == 0 {
		t.Errorf("rank 1 left no diagnostics")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		phases, _ := k.Kubectl(t, nil, "get", "pods", "-l", kubernetes.LabelJob+"="+job, "-o", "jsonpath={.items[*].status.phase}")
		if !strings.Contains(phases, "Running") && !strings.Contains(phases, "Pending") {
			break
		}
		if time.Now().After(deadline) {
			k8sDescribe(t, k, job)
			t.Fatalf("a pod still runs a minute after the Job failed: %s", phases)
		}
		time.Sleep(time.Second)
	}
}

// k8sManifest writes a manifest of one benchmark running command in the testbed's busybox
// (which the kubelets have), its results on the host folder shared, and returns its path.
func k8sManifest(t *testing.T, k *testbed.K8s, benchctlImage, shared, command string, block ...string) string {
	t.Helper()
	more := ""
	for _, b := range block {
		more += "  " + b + "\n"
	}
	body := fmt.Sprintf(`name: k8s-submit
image: {ref: %q}
gpu: {vendor: none}
kubernetes:
  resultsHostPath: %q
  benchctlImage: %q
%sbenchmarks:
  - name: hello
    command: [sh, -c, %q]
    results: r.csv
    timeout: 3m
`, k.Busybox, shared, benchctlImage, more, command)
	if len(block) == 0 {
		body = strings.Replace(body, "benchmarks:", "  pendingTimeout: 2m\nbenchmarks:", 1)
	}
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// k8sShared is a fresh results folder on the host, which the pods mount (hostPath); it is
// removed when the test ends.
func k8sShared(t *testing.T, k *testbed.K8s) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	shared := filepath.Join(k.Results, "submit-"+hex.EncodeToString(b[:]))
	t.Cleanup(func() { os.RemoveAll(shared) })
	return shared
}

// benchctl submit --scheduler kubernetes --nodes 2 --wait --collect: the objects are made
// through the API from the kubeconfig, the 2 pods run one job, submit follows it through
// the Job and its pods and collects it: one row of the benchmark from both nodes, its
// deployment_type kubernetes. jobs lists the job, done; the job secret
// is deleted once it has; cancel of an ended job is no error and deletes its Job.
func TestKubernetesSubmitWaitCollect(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	shared := k8sShared(t, k)
	m := k8sManifest(t, k, k8sBenchctlImage(t, tb, k), shared,
		`printf 'model,performance,metric\nhello,%s,ops\n' "$((JOB_COMPLETION_INDEX + 10))" > "$BENCHCTL_OUTPUT_DIR/r.csv"`)
	code, out, errout := benchctlRun(t, tb.Env(), "submit", "-m", m, "--scheduler", "kubernetes", "--kubeconfig", k.Kubeconfig,
		"--nodes", "2", "--shared-dir", shared, "--wait", "--collect", "-o", "json")
	var rep struct {
		Job, State string
		Nodes      int
		Outcomes   []struct{ Node, Outcome string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("submit: exit %d, %v\n%s\n%s", code, err, out, errout)
	}
	k8sCleanup(t, k, rep.Job)
	if !kubernetes.IsID(rep.Job) || rep.Nodes != 2 || len(rep.Outcomes) != 2 || rep.Outcomes[0].Outcome != "success" || rep.Outcomes[1].Outcome != "success" {
		t.Errorf("submit said %+v", rep)
	}
	rows := readPerf(t, filepath.Join(shared, "jobs", rep.Job, "perf.csv"))
	if len(rows) != 1 || rows[0]["deployment_type"] != "kubernetes" || rows[0]["perf_nodes"] != "2" || rows[0]["status"] != "SUCCESS" {
		t.Errorf("perf.csv: %v", rows)
	}
	// job.json and node.json say where the job ran, in the cluster's names.
	if j, err := jobdir.ReadJob(jobdir.Layout{Shared: shared}.Job(rep.Job, 0).JobFile()); err != nil || j.Source != "kubernetes" || j.Namespace != "default" {
		t.Errorf("job.json: %+v %v", j, err)
	}
	records, _ := filepath.Glob(filepath.Join(shared, "jobs", rep.Job, "nodes", "*", "node.json"))
	nodes := map[string]bool{}
	for _, p := range records {
		b, _ := os.ReadFile(p)
		var rec jobdir.NodeRecord
		if err := json.Unmarshal(b, &rec); err != nil || rec.Placement.Namespace != "default" || !strings.HasPrefix(rec.Placement.Pod, kubernetes.Name(rep.Job)+"-") ||
			!strings.HasPrefix(rec.Placement.Node, "bctk-node") {
			t.Errorf("%s: placement %+v %v", p, rec.Placement, err)
		}
		nodes[rec.Placement.Node] = true
	}
	if len(records) != 2 || len(nodes) != 2 {
		t.Errorf("node.json files %v on nodes %v", records, nodes)
	}
	if secrets, _ := k.Kubectl(t, nil, "get", "secrets", "-l", kubernetes.LabelJob+"="+rep.Job, "-o", "name"); strings.TrimSpace(secrets) != "" {
		t.Errorf("the job secret is kept after the job ended: %s", secrets)
	}
	code, out, errout = benchctlRun(t, tb.Env(), "jobs", "--shared-dir", shared, "--kubeconfig", k.Kubeconfig, "-o", "json")
	if code != 0 || !strings.Contains(out, rep.Job) || !strings.Contains(out, `"state": "done"`) {
		t.Errorf("jobs: exit %d\n%s\n%s", code, out, errout)
	}
	// collect on a machine that reaches the API but not the volume: the job folder comes
	// through a collector pod, and perf.csv is the same as from the volume.
	away := t.TempDir()
	code, out, errout = benchctlRun(t, tb.Env(), "collect", rep.Job, "--shared-dir", away, "--kubeconfig", k.Kubeconfig)
	if code != 0 || !strings.Contains(errout, "fetching them through the cluster's API") {
		t.Errorf("collect from the API: exit %d\n%s\n%s", code, out, errout)
	}
	fromVolume, _ := os.ReadFile(filepath.Join(shared, "jobs", rep.Job, "perf.csv"))
	fromAPI, err := os.ReadFile(filepath.Join(away, "jobs", rep.Job, "perf.csv"))
	if err != nil || len(fromVolume) == 0 || string(fromAPI) != string(fromVolume) {
		t.Errorf("perf.csv from the API (%v):\n%s\nfrom the volume:\n%s", err, fromAPI, fromVolume)
	}
	if left, _ := k.Kubectl(t, nil, "get", "pods", "-l", kubernetes.LabelRole+"=collector", "-o", "name"); strings.TrimSpace(left) != "" {
		// deleted with no grace: gone at once, or terminating for a moment
		t.Logf("collector pods right after collect: %s", left)
	}
	if code, out, errout := benchctlRun(t, tb.Env(), "cancel", rep.Job, "--kubeconfig", k.Kubeconfig); code != 0 {
		t.Errorf("cancel of an ended job: exit %d\n%s\n%s", code, out, errout)
	}
	// With the Job gone, a machine without the volume cannot fetch: it says so, exit 4.
	code, _, errout = benchctlRun(t, tb.Env(), "collect", rep.Job, "--shared-dir", t.TempDir(), "--kubeconfig", k.Kubeconfig)
	if code != 4 || !strings.Contains(errout, "no job "+rep.Job+" in namespace default to fetch the folders of") {
		t.Errorf("collect of a deleted job from the API: exit %d\n%s", code, errout)
	}
	if jobs, _ := k.Kubectl(t, nil, "get", "jobs", "-l", kubernetes.LabelJob+"="+rep.Job, "-o", "name"); strings.TrimSpace(jobs) != "" {
		t.Errorf("cancel left the Job: %s", jobs)
	}
}

// benchctl cancel of a running Kubernetes job deletes its Job: its pods get SIGTERM, each
// node's benchctl ends its benchmark as on scancel and says so in its status; nothing of
// the job is left on the cluster. A second cancel says the cluster has no such job, exit 4.
func TestKubernetesCancel(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	shared := k8sShared(t, k)
	m := k8sManifest(t, k, k8sBenchctlImage(t, tb, k), shared, `sleep 300`)
	code, out, errout := benchctlRun(t, tb.Env(), "submit", "-m", m, "--scheduler", "kubernetes", "--kubeconfig", k.Kubeconfig, "--nodes", "2", "--shared-dir", shared)
	job := strings.TrimSpace(out)
	if code != 0 || !kubernetes.IsID(job) {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errout)
	}
	k8sCleanup(t, k, job)
	k8sBothRun(t, k, shared, job)
	if code, out, errout := benchctlRun(t, tb.Env(), "cancel", job, "--kubeconfig", k.Kubeconfig); code != 0 {
		t.Fatalf("cancel: exit %d\n%s\n%s", code, out, errout)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		left, _ := k.Kubectl(t, nil, "get", "job,pods,secret,configmap,role,rolebinding,serviceaccount", "-l", kubernetes.LabelJob+"="+job, "-o", "name")
		if strings.TrimSpace(left) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left on the cluster 90 s after cancel:\n%s", left)
		}
		time.Sleep(time.Second)
	}
	statuses, _ := filepath.Glob(filepath.Join(shared, "jobs", job, "nodes", "*", "status.json"))
	for _, p := range statuses {
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), "cancelled") {
			t.Errorf("%s does not say the benchmark was cancelled:\n%s", p, b)
		}
	}
	if len(statuses) != 2 {
		t.Errorf("status files: %v", statuses)
	}
	code, _, errout = benchctlRun(t, tb.Env(), "cancel", job, "--kubeconfig", k.Kubeconfig)
	if code != 4 || !strings.Contains(errout, "no job "+job+" in namespace default") {
		t.Errorf("a second cancel: exit %d\n%s", code, errout)
	}
}

// The allreduce example's Kubernetes manifest (models/allreduce/kubernetes.yaml), as a user
// runs it: its image and the benchctl image pushed to the cluster's registry, which the
// kubelets pull them from; the results on a ReadWriteMany claim (a PersistentVolume of a
// host folder, bound to the claim by the cluster); submit --nodes 2 --wait --collect: the
// ring all-reduce across the 2 pods, on the nodes' network, one row in perf.csv with both
// nodes.
func TestKubernetesAllreduceExample(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	shared := k8sShared(t, k)
	bin, err := os.ReadFile(repoPath(t, "models/allreduce/bin/allreduce"))
	if err != nil {
		t.Fatalf("the allreduce example's program (make examples): %v", err)
	}
	tag := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	allreduce := k.PushImage(t, "benchctl/allreduce", tag, map[string]testbed.File{"allreduce": {Mode: 0o755, Data: bin}}, nil)
	claim := "results-" + tag
	pv := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: %[2]q, type: DirectoryOrCreate}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[1]s, namespace: default}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: %[1]s
  resources: {requests: {storage: 1Gi}}
`, claim, shared)
	if out, err := k.Kubectl(t, []byte(pv), "apply", "-f", "-"); err != nil {
		t.Fatalf("the results claim: %v\n%s", err, out)
	}
	t.Cleanup(func() { k.Kubectl(t, nil, "delete", "pvc/"+claim, "pv/"+claim, "--wait=false") })
	env := append(tb.Env(), "ALLREDUCE_IMAGE="+allreduce, "K8S_BENCHCTL_IMAGE="+k8sBenchctlImage(t, tb, k), "RESULTS_CLAIM="+claim)
	code, out, errout := benchctlRun(t, env, "submit", "-m", repoPath(t, "models/allreduce/kubernetes.yaml"), "--scheduler", "kubernetes",
		"--kubeconfig", k.Kubeconfig, "--nodes", "2", "--shared-dir", shared, "--wait", "--collect", "-o", "json")
	var rep struct{ Job string }
	json.Unmarshal([]byte(out), &rep)
	if rep.Job != "" {
		k8sCleanup(t, k, rep.Job)
	}
	if code != 0 {
		if rep.Job != "" {
			k8sDescribe(t, k, rep.Job)
		}
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errout)
	}
	// Rank 0's results (bus and algorithm bandwidth) of the 2-node ring; the image the pods
	// ran is the one submitted (its ${ALLREDUCE_IMAGE} reached the pods, which read the
	// manifest again).
	rows := readPerf(t, filepath.Join(shared, "jobs", rep.Job, "perf.csv"))
	if len(rows) != 2 {
		t.Errorf("perf.csv has %d rows, want allreduce_busbw and allreduce_algbw: %v", len(rows), rows)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r["model"], "allreduce_") || r["status"] != "SUCCESS" || r["deployment_type"] != "kubernetes" || r["nnodes"] != "2" || r["docker_image"] != allreduce {
			t.Errorf("perf.csv row: %v", r)
		}
	}
	// The kubelets pulled both images from the registry (they had neither).
	for _, ref := range []string{allreduce} {
		events, _ := k.Kubectl(t, nil, "get", "events", "--field-selector", "reason=Pulled", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, ref) {
			t.Errorf("no kubelet says it pulled %s: %s", ref, events)
		}
	}
}

// A job no node can take (a node selector none has) stays pending: submit --wait ends it
// after its pending timeout (and as long again), says the cluster scheduler's reason, and
// exits non-zero; nothing of it is left on the cluster.
func TestKubernetesPendingJobEnds(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	shared := k8sShared(t, k)
	m := k8sManifest(t, k, k8sBenchctlImage(t, tb, k), shared, "true", "pendingTimeout: 5s", "nodeSelector: {benchctl.io/e2e-nowhere: \"yes\"}")
	start := time.Now()
	code, out, errout := benchctlRun(t, tb.Env(), "submit", "-m", m, "--scheduler", "kubernetes", "--kubeconfig", k.Kubeconfig, "--nodes", "2", "--shared-dir", shared, "--wait")
	job := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if kubernetes.IsID(job) {
		k8sCleanup(t, k, job)
	}
	if code == 0 || !strings.Contains(errout, "pending for more than 5s, ended: pod ") || !strings.Contains(errout, "Unschedulable: 0/2 nodes are available") {
		t.Fatalf("submit --wait of a job no node takes: exit %d\n%s\n%s", code, out, errout)
	}
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("it took %s to end", d)
	}
	if left, _ := k.Kubectl(t, nil, "get", "job,secret,configmap,role,rolebinding,serviceaccount", "-l", kubernetes.LabelJob+"="+job, "-o", "name"); strings.TrimSpace(left) != "" {
		t.Errorf("left on the cluster: %s", left)
	}
}

// An experiment of 2 variants × 3 trials runs in one Job of 2 pods: every trial of every
// variant on both nodes, and perf.csv has a row per variant over its 3 trials.
func TestKubernetesExperiment(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	shared := k8sShared(t, k)
	body := fmt.Sprintf(`name: k8s-experiment
image: {ref: %q}
gpu: {vendor: none}
kubernetes: {resultsHostPath: %q, benchctlImage: %q, pendingTimeout: 2m}
benchmarks:
  - name: hello
    command: [sh, -c, 'printf "model,performance,metric\nhello,%%s,ops\n" "$(({{batch}} * 10 + NODE_RANK))" > "$BENCHCTL_OUTPUT_DIR/r.csv"']
    results: r.csv
    timeout: 3m
experiment:
  matrix:
    batch: [1, 2]
  repeat: 3
`, k.Busybox, shared, k8sBenchctlImage(t, tb, k))
	m := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(m, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errout := benchctlRun(t, tb.Env(), "submit", "-m", m, "--scheduler", "kubernetes", "--kubeconfig", k.Kubeconfig,
		"--nodes", "2", "--shared-dir", shared, "--wait", "--collect", "-o", "json")
	var rep struct{ Job string }
	json.Unmarshal([]byte(out), &rep)
	if rep.Job != "" {
		k8sCleanup(t, k, rep.Job)
	}
	if code != 0 {
		if rep.Job != "" {
			k8sDescribe(t, k, rep.Job)
		}
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errout)
	}
	jobs, _ := k.Kubectl(t, nil, "get", "jobs", "-l", kubernetes.LabelJob+"="+rep.Job, "-o", "name")
	if strings.Count(jobs, "job.batch/") != 1 {
		t.Errorf("the experiment ran as %q, want one Job", jobs)
	}
	rows := readPerf(t, filepath.Join(shared, "jobs", rep.Job, "perf.csv"))
	if len(rows) != 2 {
		t.Fatalf("perf.csv has %d rows, want one per variant: %v", len(rows), rows)
	}
	for _, r := range rows {
		if r["trials"] != "3" || r["status"] != "SUCCESS" || r["deployment_type"] != "kubernetes" || r["nnodes"] != "2" {
			t.Errorf("row: %v", r)
		}
	}
}

// The scheduler conformance suite against the testbed's cluster: the Indexed Job's pods
// (as Render makes them, their command showing their environment) read their node
// contexts through the cluster's API, and agree; a job the cluster never had is not
// active.
func TestKubernetesConformance(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	image := k8sBenchctlImage(t, tb, k)
	cluster := kubernetes.Cluster{Kubeconfig: k.Kubeconfig}
	api, err := cluster.Lister()
	if err != nil {
		t.Fatal(err)
	}
	var secret [32]byte
	rand.Read(secret[:])
	schedulertest.Run(t, schedulertest.Harness{
		Scheduler: kubernetes.Scheduler{API: api, Cluster: &cluster, Poll: 200 * time.Millisecond},
		MaxNodes:  2,
		Job: func(t *testing.T, n int) []map[string]string {
			job := kubernetes.NewID(time.Now())
			o, err := kubernetes.Render(kubernetes.Request{Job: job, Nodes: n, Image: k.Busybox, Manifest: []byte("{}"), Secret: hex.EncodeToString(secret[:]),
				Vendor: "none", Block: kblock.Block{ResultsHostPath: k8sShared(t, k), BenchctlImage: image, PendingTimeout: "2m"}})
			if err != nil {
				t.Fatal(err)
			}
			// Each pod shows its environment, then stays while the others are read.
			o.Job.Spec.Template.Spec.Containers[0].Command = []string{"sh", "-c", "env; echo ---; sleep 60"}
			var stream []byte
			for _, obj := range []any{o.ServiceAccount, o.Role, o.RoleBinding, o.Secret, o.ConfigMap, o.Job} {
				y, _ := yaml.Marshal(obj)
				stream = append(append(stream, "---\n"...), y...)
			}
			k8sCleanup(t, k, job)
			if out, err := k.Kubectl(t, stream, "apply", "-f", "-"); err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
			deadline := time.Now().Add(150 * time.Second)
			for {
				logs, _ := k.Kubectl(t, nil, "logs", "-l", kubernetes.LabelJob+"="+job, "--tail=-1", "--prefix")
				var envs []map[string]string
				byPod := map[string]map[string]string{}
				for _, line := range strings.Split(logs, "\n") {
					pod, kv, ok := strings.Cut(line, " ")
					if !ok {
						continue
					}
					if byPod[pod] == nil {
						byPod[pod] = map[string]string{}
					}
					if kv == "---" {
						byPod[pod]["--done"] = "yes"
					} else if key, v, ok := strings.Cut(kv, "="); ok {
						byPod[pod][key] = v
					}
				}
				for _, env := range byPod {
					if env["--done"] == "yes" {
						delete(env, "--done")
						envs = append(envs, env)
					}
				}
				if len(envs) == n {
					return envs
				}
				if time.Now().After(deadline) {
					k8sDescribe(t, k, job)
					t.Fatalf("%d of %d pods showed their environment", len(envs), n)
				}
				time.Sleep(time.Second)
			}
		},
		Garbled: []schedulertest.Garbled{{Env: map[string]string{kubernetes.EnvJob: "k8s-x", kubernetes.EnvIndex: "0", kubernetes.EnvNodes: "lots",
			kubernetes.EnvNamespace: "default", kubernetes.EnvNode: "n", kubernetes.EnvPodIP: "10.0.0.1"}, Var: kubernetes.EnvNodes}},
		UnknownJob: kubernetes.NewID(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)),
	})
}

// Bad input and a bad cluster, as a user meets them: a namespace that does not exist and
// credentials without permission to create Jobs are the user's to fix (exit 4), a cluster
// that cannot be reached is not (exit 1), and an image no kubelet can pull keeps the pods
// pending until --wait ends the job with the kubelet's reason. Each says what and where,
// and leaves nothing on the cluster.
func TestKubernetesBadInput(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	shared := k8sShared(t, k)
	image := k8sBenchctlImage(t, tb, k)
	m := k8sManifest(t, k, image, shared, "true")
	submit := func(args ...string) (int, string, string) {
		t.Helper()
		return benchctlRun(t, tb.Env(), append([]string{"submit", "-m", m, "--scheduler", "kubernetes", "--nodes", "2", "--shared-dir", shared}, args...)...)
	}
	gpus := strings.Replace(m, ".yaml", "-gpus.yaml", 1)
	body, _ := os.ReadFile(m)
	os.WriteFile(gpus, []byte(strings.Replace(string(body), "gpu: {vendor: none}", "gpu: {vendor: nvidia, count: 1}", 1)), 0o644)
	code, _, errout := benchctlRun(t, tb.Env(), "submit", "-m", gpus, "--scheduler", "kubernetes", "--nodes", "2", "--shared-dir", shared, "--kubeconfig", k.Kubeconfig)
	if code != 4 || !strings.Contains(errout, "each pod asks for 1 nvidia.com/gpu, and the most any of the cluster's 2 nodes offers is 0") {
		t.Errorf("a GPU resource no node offers: exit %d\n%s", code, errout)
	}
	if code, _, errout := submit("--kubeconfig", k.Kubeconfig, "--namespace", "bctk-nowhere"); code != 4 || !strings.Contains(errout, `the namespace "bctk-nowhere" does not exist`) {
		t.Errorf("a namespace that does not exist: exit %d\n%s", code, errout)
	}
	// A service account with no role at all, as a kubeconfig of its own.
	k.Kubectl(t, nil, "create", "serviceaccount", "bctk-nobody")
	token, err := k.Kubectl(t, nil, "create", "token", "bctk-nobody", "--duration=10m")
	if err != nil {
		t.Fatalf("a token: %v\n%s", err, token)
	}
	server, _ := k.Kubectl(t, nil, "config", "view", "--raw", "--minify", "--flatten", "-o", "jsonpath={.clusters[0].cluster.server}")
	ca, _ := k.Kubectl(t, nil, "config", "view", "--raw", "--minify", "--flatten", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
	kubeconfig := func(server, user string) string {
		p := filepath.Join(t.TempDir(), "kubeconfig")
		body := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]\n"+
			"users: [{name: u, user: %s}]\ncontexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\ncurrent-context: x\n", server, ca, user)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nobody := kubeconfig(strings.TrimSpace(server), fmt.Sprintf("{token: %q}", strings.TrimSpace(token)))
	if code, _, errout := submit("--kubeconfig", nobody); code != 4 || !strings.Contains(errout, "not allowed") || !strings.Contains(errout, "forbidden") {
		t.Errorf("no permission: exit %d\n%s", code, errout)
	}
	unreachable := kubeconfig("https://127.0.0.1:1", "{token: x}")
	if code, _, errout := submit("--kubeconfig", unreachable); code != 1 || !strings.Contains(errout, "cannot reach the API server at https://127.0.0.1:1") {
		t.Errorf("a cluster that cannot be reached: exit %d\n%s", code, errout)
	}
	if left, _ := k.Kubectl(t, nil, "get", "job,secret,configmap,role,rolebinding,serviceaccount", "-l", kubernetes.LabelJob, "-o", "name"); strings.Contains(left, "benchctl-k8s-") {
		t.Logf("benchctl objects on the cluster (other tests' may be among them): %s", left)
	}
	// An image no kubelet can pull.
	bad := strings.Replace(m, ".yaml", "-pull.yaml", 1)
	os.WriteFile(bad, []byte(strings.Replace(strings.Replace(string(body), k.Busybox, k.Registry+"/benchctl/none:1", 1), "pendingTimeout: 2m", "pendingTimeout: 15s", 1)), 0o644)
	code, out, errout := benchctlRun(t, tb.Env(), "submit", "-m", bad, "--scheduler", "kubernetes", "--nodes", "2", "--shared-dir", shared, "--kubeconfig", k.Kubeconfig, "--wait")
	job := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if kubernetes.IsID(job) {
		k8sCleanup(t, k, job)
	}
	// (15 s: the kubelet has said why by then; a shorter bound may end the job while the
	// pod is still "starting", which is then the reason given.)
	if code == 0 || !strings.Contains(errout, "pending for more than 15s, ended") || !strings.Contains(errout, "ImagePull") {
		t.Errorf("an image no kubelet can pull: exit %d\n%s\n%s", code, out, errout)
	}
}

// benchctl build --benchctl-image --push: the static benchctl makes its own image (itself
// and its agent, nothing else) and pushes it through the engine; the kubelets pull it as a
// job's benchctl image, and the job runs. The CGO build is refused, saying why.
func TestKubernetesBenchctlImage(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	if k.RegistryPush == "" {
		t.Fatalf("%s names no registry the engines push to (BENCHCTL_K8S_REGISTRY_PUSH): start the Docker testbed before k8s-up.sh", testbed.K8sEnvFile())
	}
	tag := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	static := exec.Command(tb.BenchctlStatic(t), "build", "--benchctl-image", "--push", k.RegistryPush+"/benchctl/benchctl:"+tag)
	static.Env = append(tb.Env(), "BENCHCTL_AGENT="+tb.Agent(t), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	out, err := static.CombinedOutput()
	if err != nil {
		t.Fatalf("build --benchctl-image: %v\n%s", err, out)
	}
	code, _, errout := benchctlRun(t, tb.Env(), "build", "--benchctl-image", "--push", k.RegistryPush+"/benchctl/benchctl:"+tag+"-cgo")
	if code != 4 || !strings.Contains(errout, "is linked dynamically") {
		t.Errorf("the CGO build's image: exit %d\n%s", code, errout)
	}
	shared := k8sShared(t, k)
	m := k8sManifest(t, k, k.Registry+"/benchctl/benchctl:"+tag, shared, `printf 'model,performance,metric\nhello,1,ops\n' > "$BENCHCTL_OUTPUT_DIR/r.csv"`)
	code, sout, errout := benchctlRun(t, tb.Env(), "submit", "-m", m, "--scheduler", "kubernetes", "--kubeconfig", k.Kubeconfig, "--nodes", "2", "--shared-dir", shared, "--wait")
	job := strings.TrimSpace(strings.SplitN(sout, "\n", 2)[0])
	if kubernetes.IsID(job) {
		k8sCleanup(t, k, job)
	}
	if code != 0 {
		if kubernetes.IsID(job) {
			k8sDescribe(t, k, job)
		}
		t.Fatalf("a job with the pushed benchctl image: exit %d\n%s\n%s", code, sout, errout)
	}
}

// k8sCleanup deletes job's objects (and so its pods) when the test ends.
func k8sCleanup(t *testing.T, k *testbed.K8s, job string) {
	t.Cleanup(func() {
		k.Kubectl(t, nil, "delete", "job,serviceaccount,role,rolebinding,secret,configmap", "-l", kubernetes.LabelJob+"="+job, "--wait=false")
	})
}

// k8sBothRun waits until both nodes of job are running their benchmark.
func k8sBothRun(t *testing.T, k *testbed.K8s, shared, job string) {
	t.Helper()
	deadline := time.Now().Add(150 * time.Second)
	for {
		running := 0
		statuses, _ := filepath.Glob(filepath.Join(shared, "jobs", job, "nodes", "*", "status.json"))
		for _, p := range statuses {
			b, _ := os.ReadFile(p)
			var st jobdir.Status
			if json.Unmarshal(b, &st) == nil && len(st.Phases) > 0 && st.Phases[len(st.Phases)-1].Name == jobdir.PhaseRun {
				running++
			}
		}
		if running == 2 {
			return
		}
		if time.Now().After(deadline) {
			k8sDescribe(t, k, job)
			t.Fatalf("the job's 2 nodes never ran: %v", statuses)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// podProcess is the pid of the process named comm of job's rank, found by its
// environment (the pods' processes are this machine's).
func podProcess(t *testing.T, job string, rank int, comm string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); strings.TrimSpace(string(c)) != comm {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		vars := strings.Split(string(env), "\x00")
		if slices.Contains(vars, kubernetes.EnvJob+"="+job) && slices.Contains(vars, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", rank)) {
			return pid
		}
	}
	t.Fatalf("no %s process of job %s rank %d", comm, job, rank)
	return 0
}

// A node lost while its benchmark runs (its benchctl killed outright, as when its machine
// dies; the pod ends with 137): the Job fails at once with the pod named, the other rank
// is stopped, and jobs and collect name the node lost, from the Job's verdict. A pod
// deleted (kubectl delete pod) gets SIGTERM first: its benchctl says so, cancelled.
func TestKubernetesLostAndDeletedPods(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	image := k8sBenchctlImage(t, tb, k)
	for _, how := range []string{"killed", "deleted"} {
		shared := k8sShared(t, k)
		m := k8sManifest(t, k, image, shared, `sleep 120`)
		code, out, errout := benchctlRun(t, tb.Env(), "submit", "-m", m, "--scheduler", "kubernetes", "--kubeconfig", k.Kubeconfig, "--nodes", "2", "--shared-dir", shared)
		job := strings.TrimSpace(out)
		if code != 0 || !kubernetes.IsID(job) {
			t.Fatalf("submit: exit %d\n%s\n%s", code, out, errout)
		}
		k8sCleanup(t, k, job)
		k8sBothRun(t, k, shared, job)
		if how == "killed" {
			syscall.Kill(podProcess(t, job, 1, "benchctl"), syscall.SIGKILL)
		} else if out, err := k.Kubectl(t, nil, "delete", "pod", "-l", kubernetes.LabelJob+"="+job+",batch.kubernetes.io/job-completion-index=1", "--wait=false"); err != nil {
			t.Fatalf("deleting rank 1's pod: %v\n%s", err, out)
		}
		start := time.Now()
		var jobs []struct{ ID, State string }
		for {
			_, out, _ := benchctlRun(t, tb.Env(), "jobs", "--shared-dir", shared, "--kubeconfig", k.Kubeconfig, "-o", "json")
			json.Unmarshal([]byte(out), &jobs)
			if len(jobs) == 1 && jobs[0].State != "running" {
				break
			}
			if time.Since(start) > 90*time.Second {
				k8sDescribe(t, k, job)
				t.Fatalf("%s: the job still runs 90 s after rank 1's end: %s", how, out)
			}
			time.Sleep(time.Second)
		}
		if out, err := k.Kubectl(t, nil, "wait", "--for=condition=failed", "job/"+kubernetes.Name(job), "--timeout=90s"); err != nil {
			t.Fatalf("%s: the Job did not fail: %v\n%s", how, err, out)
		}
		code, out, errout = benchctlRun(t, tb.Env(), "collect", job, "--shared-dir", shared, "--kubeconfig", k.Kubeconfig)
		want := "1-10.213.0.1" // rank 1's node folder
		switch how {
		case "killed":
			if jobs[0].State != "lost" || code == 0 || !strings.Contains(errout, want) || !strings.Contains(errout, "lost") {
				t.Errorf("killed: jobs says %q; collect exit %d\n%s\n%s", jobs[0].State, code, out, errout)
			}
		case "deleted":
			if jobs[0].State != "failed" || code == 0 || !strings.Contains(errout, "cancelled") {
				t.Errorf("deleted: jobs says %q; collect exit %d\n%s\n%s", jobs[0].State, code, out, errout)
			}
		}
		reason, _ := k.Kubectl(t, nil, "get", "job/"+kubernetes.Name(job), "-o", `jsonpath={.status.conditions[?(@.type=="Failed")].message}`)
		if !strings.Contains(reason, kubernetes.Name(job)+"-1-") {
			t.Errorf("%s: the Job's verdict does not name rank 1's pod: %q", how, reason)
		}
	}
}

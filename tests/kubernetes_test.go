package tests

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	kblock "github.com/benchctl/benchctl/manifest/kubernetes"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
	"github.com/benchctl/benchctl/tests/testbed"
)

// The objects scheduler/kubernetes renders, applied to the testbed's real cluster (an API
// server, two kubelets, containerd): the benchctl image's init container copies the static
// benchctl and its agent into the benchmark's image (busybox), each pod runs `benchctl run
// --runtime process` with the manifest from the ConfigMap and the secret as one file, and
// writes to the results volume; the pods' benchctl find each other through the API (their
// node context: scheduler/kubernetes) and run one job of 2 nodes over the job channel.

// k8sBenchctlImage imports an image of the static benchctl, its agent and busybox's cp
// into every node, and returns its name.
func k8sBenchctlImage(t *testing.T, tb *testbed.Testbed, k *testbed.K8s) string {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ref := fmt.Sprintf("bctk.local/benchctl:e2e-%d", time.Now().UnixNano())
	k.ImportImage(t, ref, map[string]testbed.File{
		"usr/local/bin/benchctl":       {Mode: 0o755, Data: read(tb.BenchctlStatic(t))},
		"usr/local/bin/benchctl-agent": {Mode: 0o755, Data: read(tb.Agent(t))},
		"bin/busybox":                  {Mode: 0o755, Data: read("/bin/busybox")},
		"bin/cp":                       {Link: "busybox"},
		"bin/sh":                       {Link: "busybox"},
	}, nil)
	return ref
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

// A pod that fails fails the Job at once (its pod failure policy: no retry), and the
// Job's other pod is stopped, long before its own command would have ended: its benchctl
// was told by the job channel, as on Slurm.
func TestKubernetesRenderedJobFailsFast(t *testing.T) {
	tb := testbed.Require(t)
	k := testbed.RequireK8s(t)
	start := time.Now()
	job, results := k8sSubmit(t, k, k8sBenchctlImage(t, tb, k), 2, []string{"sh", "-c", `if [ "$JOB_COMPLETION_INDEX" = 1 ]; then sleep 2; exit 3; fi; sleep 120`})
	if out, err := k.Kubectl(t, nil, "wait", "--for=condition=failed", "job/"+kubernetes.Name(job), "--timeout=100s"); err != nil {
		k8sDescribe(t, k, job)
		t.Fatalf("the job did not fail: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 100*time.Second {
		t.Errorf("the job took %s to fail", d)
	}
	// Rank 0 was stopped by the job channel (rank 1's failure), as on Slurm.
	if rank0, _ := filepath.Glob(filepath.Join(results, "jobs", job, "nodes", "0-*", "status.json")); len(rank0) == 1 {
		b, _ := os.ReadFile(rank0[0])
		if !strings.Contains(string(b), "rank 1") || !strings.Contains(string(b), "failed benchmark hello") {
			t.Errorf("rank 0's status does not name rank 1's failure:\n%s", b)
		}
	} else {
		t.Errorf("rank 0's status: %v", rank0)
	}
	reason, _ := k.Kubectl(t, nil, "get", "job/"+kubernetes.Name(job), "-o", `jsonpath={.status.conditions[?(@.type=="Failed")].reason}`)
	if reason != "PodFailurePolicy" {
		t.Errorf("the Job failed for %q, want PodFailurePolicy", reason)
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

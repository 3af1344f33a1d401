package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// apiServer answers the pods list as the API does (the fields benchctl reads), checking
// the token and the label selector; pods gives the items of each answer in turn.
func apiServer(t *testing.T, pods func(call int) []map[string]any) (*API, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/api/v1/namespaces/bench/pods" || r.URL.Query().Get("labelSelector") != LabelJob+"=j7" {
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(map[string]string{"message": `pods is forbidden: User "system:serviceaccount:bench:x" cannot list resource "pods"`})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "PodList", "items": pods(int(calls.Add(1)))})
	}))
	t.Cleanup(srv.Close)
	return &API{Base: srv.URL, Token: "tok", HTTP: srv.Client()}, &calls
}

func pod(name string, index int, phase, ip string, extra map[string]any) map[string]any {
	status := map[string]any{"phase": phase, "podIP": ip}
	for k, v := range extra {
		status[k] = v
	}
	return map[string]any{"metadata": map[string]any{"name": name, "annotations": map[string]string{"batch.kubernetes.io/job-completion-index": itoa(index)}},
		"spec": map[string]any{"nodeName": "node" + itoa(index)}, "status": status}
}

func itoa(i int) string { return strconv.Itoa(i) }

func podEnv(extra ...string) scheduler.Lookup {
	m := map[string]string{EnvJob: "j7", EnvNodes: "2", EnvIndex: "1", EnvNamespace: "bench", EnvNode: "gpu-b", EnvPodIP: "10.0.0.12", EnvPending: "2s",
		EnvPod: "benchctl-j7-1-x2k"}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "<unset>" {
			delete(m, extra[i])
		} else {
			m[extra[i]] = extra[i+1]
		}
	}
	return testutil.LookupOf(m)
}

// A pod's node context: its rank is its completion index, the hosts are the pods' IPs in
// rank order once every pod has one (they come up at their own pace), rank 0's the master's.
func TestPodNode(t *testing.T) {
	api, calls := apiServer(t, func(call int) []map[string]any {
		if call == 1 { // rank 0 not scheduled yet
			return []map[string]any{pod("p1", 1, "Running", "10.0.0.12", nil), pod("p0", 0, "Pending", "", nil)}
		}
		return []map[string]any{pod("p1", 1, "Running", "10.0.0.12", nil), pod("p0", 0, "Running", "10.0.0.11", nil)}
	})
	n, err := PodNode(context.Background(), podEnv(), api, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n.Rank != 1 || n.World != 2 || n.JobID != "j7" || n.Host != "10.0.0.12" || n.MasterAddr != "10.0.0.11" ||
		strings.Join(n.Hosts, ",") != "10.0.0.11,10.0.0.12" || n.Source != "kubernetes" || calls.Load() != 2 ||
		n.Placement != (jobdir.Placement{Scheduler: "kubernetes", Namespace: "bench", Pod: "benchctl-j7-1-x2k", Node: "gpu-b"}) {
		t.Errorf("%+v after %d calls", n, calls.Load())
	}
	// One node asks nothing of the API.
	n, err = PodNode(context.Background(), podEnv(EnvNodes, "1", EnvIndex, "0"), nil, time.Millisecond)
	if err != nil || n.MasterAddr != "10.0.0.12" || len(n.Hosts) != 1 {
		t.Errorf("one node: %+v %v", n, err)
	}
}

// A pod that stays pending is named with the cluster scheduler's reason when the wait
// ends; one that failed at once; a reason of 6,000 characters is cut.
func TestPodNodeWaitsBoundedAndNamesWhy(t *testing.T) {
	unschedulable := map[string]any{"conditions": []map[string]any{{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
		"message": "0/2 nodes are available: 2 Insufficient amd.com/gpu." + strings.Repeat(" x", 3000)}}}
	api, _ := apiServer(t, func(int) []map[string]any {
		return []map[string]any{pod("p1", 1, "Running", "10.0.0.12", nil), pod("p0", 0, "Pending", "", unschedulable)}
	})
	start := time.Now()
	_, err := PodNode(context.Background(), podEnv(EnvPending, "300ms"), api, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "after 300ms, rank 0's pod p0 is Pending without an address: Unschedulable: 0/2 nodes are available: 2 Insufficient amd.com/gpu.") ||
		len(err.Error()) > 600 || time.Since(start) > 10*time.Second {
		t.Errorf("%v (%d bytes)", err, len(err.Error()))
	}
	api, _ = apiServer(t, func(int) []map[string]any {
		return []map[string]any{pod("p1", 1, "Running", "10.0.0.12", nil), pod("p0", 0, "Failed", "", map[string]any{"reason": "Evicted", "message": "The node was low on memory."})}
	})
	if _, err := PodNode(context.Background(), podEnv(), api, time.Millisecond); err == nil || !strings.Contains(err.Error(), "rank 0's pod p0 failed: Evicted The node was low on memory.") {
		t.Errorf("failed pod: %v", err)
	}
	api, _ = apiServer(t, func(int) []map[string]any { return []map[string]any{pod("p1", 1, "Running", "10.0.0.12", nil)} })
	if _, err := PodNode(context.Background(), podEnv(EnvPending, "100ms"), api, 20*time.Millisecond); err == nil || !strings.Contains(err.Error(), "rank 0 has no pod (deleted, or not made yet)") {
		t.Errorf("deleted pod: %v", err)
	}
}

// The API refusing (no Role), or answering garbage, is said with its words.
func TestPodNodeAPIRefusals(t *testing.T) {
	api, _ := apiServer(t, nil)
	_, err := PodNode(context.Background(), podEnv(EnvNamespace, "other", EnvPending, "100ms"), api, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden") || !strings.Contains(err.Error(), "cannot list resource") || !strings.Contains(err.Error(), "Role") {
		t.Errorf("forbidden: %v", err)
	}
	api.Token = "wrong"
	if _, err := api.JobPods(context.Background(), "bench", "j7"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("unauthorized: %v", err)
	}
	if _, err := parsePods([]byte(`{"items": [{"metadata": 7}]}`)); err == nil {
		t.Error("garbage was read")
	}
}

// A garbled environment is a context error naming the variable (exit 4).
func TestPodNodeBadEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{EnvJob, "<unset>"}, EnvJob + ": is not set"},
		{[]string{EnvNodes, "2000000000"}, EnvNodes + `: "2000000000" is not a node count from 1 to 100000`},
		{[]string{EnvNodes, "0"}, EnvNodes},
		{[]string{EnvIndex, "2"}, EnvIndex + `: "2" is not a rank of a job of 2 nodes`},
		{[]string{EnvIndex, "-1"}, EnvIndex},
		{[]string{EnvPending, "soon"}, EnvPending + `: "soon" is not a duration`},
	} {
		_, err := PodNode(context.Background(), podEnv(c.env...), nil, time.Millisecond)
		var ce *scheduler.ContextError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ce) {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
	}
	if _, err := InCluster(testutil.LookupOf(nil)); err == nil || !strings.Contains(err.Error(), "not a pod of a Kubernetes cluster") {
		t.Errorf("outside a cluster: %v", err)
	}
}

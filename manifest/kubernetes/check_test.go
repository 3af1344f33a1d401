package kubernetes

import (
	"strings"
	"testing"
	"time"
)

// What Kubernetes would refuse is refused here first, at its field; a block with
// everything right says nothing.
func TestCheck(t *testing.T) {
	good := Block{Namespace: "bench", ServiceAccount: "runner.sa", NodeSelector: map[string]string{"node.kubernetes.io/instance-type": "mi300x", "gpu": ""},
		Tolerations:   []Toleration{{Key: "amd.com/gpu", Operator: "Exists", Effect: "NoSchedule"}, {Key: "dedicated", Value: "bench"}, {Operator: "Exists"}},
		PriorityClass: "high", CPU: "500m", Memory: "64Gi", GPUResource: "amd.com/gpu", ResultsClaim: "results", Network: "pod",
		BenchctlImage: "registry.example.com/benchctl:1.4", PendingTimeout: "90s"}
	if p := good.Check(); len(p) != 0 {
		t.Fatalf("%+v", p)
	}
	if good.Pending() != 90*time.Second || (&Block{}).Pending() != DefaultPendingTimeout {
		t.Error("pending timeout")
	}
	long := strings.Repeat("a", 6000)
	for _, c := range []struct {
		b     Block
		field string
		want  string
	}{
		{Block{Namespace: "Bench"}, "namespace", "is not a namespace name"},
		{Block{Namespace: long}, "namespace", "…\" is not a namespace name"},
		{Block{ServiceAccount: "a b"}, "serviceAccount", "is not a Kubernetes object name"},
		{Block{PriorityClass: "-x"}, "priorityClass", "is not a Kubernetes object name"},
		{Block{NodeSelector: map[string]string{"bad key!": "x"}}, "nodeSelector", "is not a label key"},
		{Block{NodeSelector: map[string]string{"gpu": long}}, "nodeSelector.gpu", "is not a label value"},
		{Block{Tolerations: []Toleration{{Operator: "Equal"}}}, "tolerations[0].key", "is required with operator Equal"},
		{Block{Tolerations: []Toleration{{Key: "k", Operator: "Exists", Value: "v"}}}, "tolerations[0].value", "must be empty"},
		{Block{Tolerations: []Toleration{{Key: "k", Operator: "In"}}}, "tolerations[0].operator", "is not a toleration operator"},
		{Block{Tolerations: []Toleration{{Key: "k", Effect: "NoRun"}}}, "tolerations[0].effect", "is not a taint effect"},
		{Block{CPU: "0"}, "cpu", "is not a Kubernetes quantity above zero"},
		{Block{Memory: "64 GB"}, "memory", "is not a Kubernetes quantity"},
		{Block{GPUResource: "gpu"}, "gpuResource", "is not an extended resource name"},
		{Block{ResultsClaim: "r", ResultsHostPath: "/data"}, "resultsHostPath", "not both"},
		{Block{ResultsHostPath: "data"}, "resultsHostPath", "must be an absolute, clean folder"},
		{Block{ResultsHostPath: "/"}, "resultsHostPath", "must be an absolute, clean folder"},
		{Block{Network: "bridge"}, "network", "is not a network (host or pod)"},
		{Block{BenchctlImage: "has space"}, "benchctlImage", "is not an image reference"},
		{Block{PendingTimeout: "-5m"}, "pendingTimeout", "is not a duration"},
		{Block{PendingTimeout: "9000h"}, "pendingTimeout", "is not a duration"},
	} {
		p := c.b.Check()
		if len(p) != 1 || p[0].Field != c.field || !strings.Contains(p[0].Msg, c.want) || len(p[0].Msg) > 400 {
			t.Errorf("%+v: %+v, want %s: %s", c.b, p, c.field, c.want)
		}
	}
}

func TestGPUResourceOf(t *testing.T) {
	var none *Block
	if none.GPUResourceOf("nvidia") != "nvidia.com/gpu" || (&Block{}).GPUResourceOf("amd") != "amd.com/gpu" ||
		(&Block{GPUResource: "gpu.intel.com/i915"}).GPUResourceOf("amd") != "gpu.intel.com/i915" || none.GPUResourceOf("none") != "" {
		t.Error("GPUResourceOf")
	}
}

package kubernetes

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest/kubernetes"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// The objects of a submission, for both vendors' GPU resources and every option of the
// block, as golden files (go test ./scheduler/kubernetes -update rewrites them).
func TestRenderGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		r      Request
	}{
		{"nvidia-defaults.yaml", Request{Job: "7", Nodes: 2, Image: "registry.example.com/allreduce:1", Manifest: []byte(`{"name":"allreduce"}`),
			Secret: secret, Vendor: "nvidia", GPUs: 8}},
		{"amd-every-option.yaml", Request{Job: "bench-20261128-1", Nodes: 4, Image: "registry.example.com/rccl-tests:6.2", Manifest: []byte(`{"name":"rccl"}`),
			Secret: secret, Vendor: "amd", GPUs: 8, RunArgs: []string{"--benchmarks", "all_reduce"},
			Block: kubernetes.Block{Namespace: "bench", ServiceAccount: "runner", NodeSelector: map[string]string{"node.kubernetes.io/instance-type": "mi300x"},
				Tolerations:   []kubernetes.Toleration{{Key: "amd.com/gpu", Operator: "Exists", Effect: "NoSchedule"}, {Key: "dedicated", Value: "bench"}},
				PriorityClass: "high", CPU: "96", Memory: "1Ti", GPUResource: "amd.com/gpu", ResultsHostPath: "/data/benchctl", Network: "pod",
				BenchctlImage: "registry.example.com/benchctl:1.4", PendingTimeout: "5m"},
			Env: map[string]string{"NCCL_DEBUG": "INFO", "DATA": "/data/llama"}, Secrets: map[string]string{"HF_TOKEN": "hf_s3cretvalue"}}},
		{"cpu-only.yaml", Request{Job: "cpu-1", Nodes: 1, Image: "busybox:1.36", Manifest: []byte(`{}`), Secret: secret, Vendor: "none",
			Block: kubernetes.Block{ResultsClaim: "results"}}},
	} {
		o, err := Render(c.r)
		if err != nil {
			t.Fatalf("%s: %v", c.golden, err)
		}
		got, err := o.YAML()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(got), secret) || strings.Contains(string(got), "hf_s3cretvalue") {
			t.Errorf("%s: the YAML shows a secret", c.golden)
		}
		for k, v := range c.r.Secrets {
			if string(o.Secret.Data[k]) != v {
				t.Errorf("%s: the Secret holds %s = %q", c.golden, k, o.Secret.Data[k])
			}
		}
		p := filepath.Join("testdata", c.golden)
		if *update {
			if err := os.WriteFile(p, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from the golden file (go test -update to accept):\n%s", c.golden, got)
		}
		if string(o.Secret.Data["job.secret"]) != secret+"\n" {
			t.Errorf("%s: the Secret holds %q", c.golden, o.Secret.Data["job.secret"])
		}
	}
}

// What the cluster would refuse is refused before it is asked, saying what.
func TestRenderRefusals(t *testing.T) {
	ok := Request{Job: "7", Nodes: 2, Image: "img", Secret: secret, Vendor: "nvidia", GPUs: 1}
	for _, c := range []struct {
		edit func(*Request)
		want string
	}{
		{func(r *Request) { r.Nodes = 0 }, "0 nodes: give 1 to 100000"},
		{func(r *Request) { r.Nodes = 2_000_000_000 }, "2000000000 nodes"},
		{func(r *Request) { r.Job = "Job_7" }, `job id "Job_7" cannot name a Job`},
		{func(r *Request) { r.Job = "job_7" }, `job id "job_7" cannot name a Job`},
		{func(r *Request) { r.Job = "job.7" }, `job id "job.7" cannot name a Job`},
		{func(r *Request) { r.Job = "7-" }, `cannot name a Job`},
		{func(r *Request) { r.Job = strings.Repeat("7", 60) }, "cannot name a Job"},
		{func(r *Request) { r.Image = "" }, "needs an image the kubelets pull"},
		{func(r *Request) { r.Secret = "short" }, "64 hexadecimal digits"},
		{func(r *Request) { r.Block.Network = "bridge" }, "kubernetes.network"},
		{func(r *Request) { r.Vendor = "intel" }, `1 GPUs a node of vendor "intel": name the resource`},
	} {
		r := ok
		c.edit(&r)
		if _, err := Render(r); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

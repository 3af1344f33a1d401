package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/manifest"
)

func amdNode(n int) GPUAccess {
	var sys []gpu.GPU
	for i := range n {
		sys = append(sys, gpu.GPU{Index: i, Name: "AMD Instinct MI250X", Arch: "gfx90a", RenderNode: "/dev/dri/renderD" + string(rune('0'+i))})
	}
	h := gpuHost{statGID: func(string) (uint32, error) { return 44, nil }}
	acc, err := access(GPUAccess{Vendor: gpu.VendorAMD, System: sys, host: h}, sys)
	if err != nil {
		panic(err)
	}
	return acc
}

// madengine's run scripts read MAD_* variables; they reach the container with its names
// and meanings, GPU facts from this node's inventory.
func TestMADEnvironment(t *testing.T) {
	b := manifest.Benchmark{Name: "pyt_vllm", Command: []string{"bash", "run.sh"}, Results: "perf_vllm.csv",
		Model: &manifest.Model{NGPUs: "2"}}
	acc, err := modelGPUs(b, amdNode(8))
	if err != nil {
		t.Fatal(err)
	}
	n := Node{JobID: "7", Rank: 1, World: 3, MasterAddr: "gpu-01", MasterPort: 29500, Host: "gpu-02", Source: "slurm"}
	spec := BuildSpec(&manifest.Manifest{Name: "m"}, b, n, "img", "k", "/r", acc, nil)
	env := map[string]string{}
	for _, e := range spec.Env {
		env[e.Name] = e.Value
	}
	for k, want := range map[string]string{
		"MAD_MODEL_NAME": "pyt_vllm", "MAD_GPU_VENDOR": "AMD", "MAD_RUNTIME_NGPUS": "2", "MAD_SYSTEM_NGPUS": "8",
		"MAD_SYSTEM_GPU_ARCHITECTURE": "gfx90a", "MAD_SYSTEM_GPU_PRODUCT_NAME": "AMD Instinct MI250X",
		"MAD_MULTI_NODE_RUNNER": "torchrun --nnodes=3 --nproc_per_node=2 --node_rank=1 --master_addr=gpu-01 --master_port=29500",
		"MAD_LAUNCHER_TYPE":     "torchrun",
		"MAD_DEPLOYMENT_TYPE":   "slurm", "ROCR_VISIBLE_DEVICES": "0,1",
		"NODE_RANK": "1", "NNODES": "3", "MASTER_ADDR": "gpu-01", "MASTER_PORT": "29500",
	} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	// Without GPUs (a CPU benchmark) the runner still names one process per node: on one
	// node, madengine's standalone line.
	spec = BuildSpec(&manifest.Manifest{Name: "m"}, manifest.Benchmark{Name: "cpu", Command: []string{"x"}}, Node{World: 1, MasterAddr: "127.0.0.1", MasterPort: 20000},
		"img", "", "/r", GPUAccess{Vendor: manifest.VendorNone}, nil)
	for _, e := range spec.Env {
		if e.Name == "MAD_MULTI_NODE_RUNNER" && e.Value != "torchrun --standalone --nproc_per_node=1" {
			t.Errorf("one node: %s", e.Value)
		}
		if e.Name == "MAD_OUTPUT_CSV" { // benchctl's own crutch: a model leaves its CSV where madengine finds it
			t.Errorf("MAD_OUTPUT_CSV is set: %s", e.Value)
		}
		if e.Name == "MAD_DEPLOYMENT_TYPE" && e.Value != "local" {
			t.Errorf("outside Slurm, MAD_DEPLOYMENT_TYPE=%s, want local", e.Value)
		}
	}
}

func TestModelGPUs(t *testing.T) {
	node := amdNode(4)
	for _, c := range []struct {
		ngpus string
		want  int
		err   string
	}{
		{"", 4, ""}, {"-1", 4, ""}, {"all", 4, ""}, {"1", 1, ""}, {"4", 4, ""},
		{"8", 0, "needs 8 GPUs (n_gpus) but this node gives the job 4 of its 4"},
		{"0", 0, `n_gpus "0" is not a number of GPUs`}, {"two", 0, `n_gpus "two" is not a number`},
	} {
		acc, err := modelGPUs(manifest.Benchmark{Name: "m", Model: &manifest.Model{NGPUs: c.ngpus}}, node)
		if c.err != "" {
			var ge *GPUError
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &ge) {
				t.Errorf("n_gpus %q: %v, want %q", c.ngpus, err, c.err)
			}
			continue
		}
		if err != nil || len(acc.GPUs) != c.want || len(acc.System) != 4 {
			t.Errorf("n_gpus %q: %d GPUs, %v", c.ngpus, len(acc.GPUs), err)
		}
	}
	if _, err := modelGPUs(manifest.Benchmark{Name: "m", Model: &manifest.Model{NGPUs: "2"}}, GPUAccess{Vendor: manifest.VendorNone}); err == nil {
		t.Error("n_gpus 2 on a node without GPUs was accepted")
	}
}

func TestSkipArch(t *testing.T) {
	amd := amdNode(1)
	nv := GPUAccess{Vendor: gpu.VendorNVIDIA, System: []gpu.GPU{{Name: "NVIDIA A100-SXM4-80GB", Arch: "sm_80"}}}
	for _, c := range []struct {
		acc  GPUAccess
		skip []string
		want bool
	}{
		{amd, []string{"gfx90a"}, true}, {amd, []string{"gfx942", " GFX90A "}, true}, {amd, []string{"MI250"}, true},
		{amd, []string{"gfx942"}, false}, {amd, []string{"MI300X"}, false}, {amd, nil, false},
		{nv, []string{"A100"}, true}, {nv, []string{"sm_80"}, true}, {nv, []string{"H100"}, false},
		{GPUAccess{Vendor: manifest.VendorNone}, []string{"gfx90a"}, false},
	} {
		got := skipArch(manifest.Benchmark{Name: "m", Model: &manifest.Model{SkipGPUArch: c.skip}}, c.acc)
		if (got != "") != c.want {
			t.Errorf("%v on %+v: %q", c.skip, c.acc.System, got)
		}
	}
}

// --security-opt and --group-add from container.extraOptions reach the Engine API (the
// GPU's groups kept), and the dry run shows them.
func TestExtraOptionsReachTheEngine(t *testing.T) {
	m := &manifest.Manifest{Name: "m", Container: manifest.Container{Network: "host", IPC: "host",
		SecurityOpt: []string{"seccomp=unconfined"}, GroupAdd: []string{"video"}}}
	acc := amdNode(1)
	acc.GroupAdd = []string{"44"}
	spec := BuildSpec(m, manifest.Benchmark{Name: "b", Command: []string{"x"}}, Node{World: 1}, "img", "", "/r", acc, nil)
	_, hc := configOf(spec)
	if !slicesEqual(hc.SecurityOpt, []string{"seccomp=unconfined"}) || !slicesEqual(hc.GroupAdd, []string{"44", "video"}) {
		t.Fatalf("host config: security %v groups %v", hc.SecurityOpt, hc.GroupAdd)
	}
	if run := spec.DockerRun(); !strings.Contains(run, "--security-opt seccomp=unconfined") || !strings.Contains(run, "--group-add video") {
		t.Fatalf("dry run: %s", run)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// A MAD model with its own container settings (additional_docker_run_options) runs with
// them and its own mounts; the others keep the manifest's.
func TestModelContainerOverride(t *testing.T) {
	m := &manifest.Manifest{Name: "m", Container: manifest.Container{Network: "host", IPC: "host"},
		Mounts: []manifest.Mount{{Source: "/a", Target: "/a"}}}
	own := manifest.Container{Network: "host", IPC: "host", ShmSize: 1 << 30}
	b := manifest.Benchmark{Name: "tuned", Command: []string{"x"}, Container: &own,
		Mounts: []manifest.Mount{{Source: "/a", Target: "/a"}, {Source: "/data", Target: "/data", ReadOnly: true}}}
	spec := BuildSpec(m, b, Node{World: 1}, "img", "", "/r", GPUAccess{Vendor: manifest.VendorNone}, nil)
	if spec.Container.ShmSize != 1<<30 || len(spec.Mounts) != 3 || spec.Mounts[1].Target != "/data" {
		t.Fatalf("tuned: %+v %+v", spec.Container, spec.Mounts)
	}
	plain := BuildSpec(m, manifest.Benchmark{Name: "plain", Command: []string{"x"}}, Node{World: 1}, "img", "", "/r", GPUAccess{Vendor: manifest.VendorNone}, nil)
	if plain.Container.ShmSize != 0 || len(plain.Mounts) != 2 {
		t.Fatalf("plain: %+v %+v", plain.Container, plain.Mounts)
	}
}

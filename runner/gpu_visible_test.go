package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/manifest"
)

// containerEnv is the environment a benchmark's container gets, by name.
func containerEnv(t *testing.T, m *manifest.Manifest, acc GPUAccess, environ []string) map[string]string {
	t.Helper()
	spec := BuildSpec(m, manifest.Benchmark{Name: "b", Command: []string{"/run"}}, Node{JobID: "1", World: 1, Host: "n"}, "img", "k", t.TempDir(), acc, environ)
	cfg, _ := configOf(spec)
	env := map[string]string{}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// A container sees only the selected GPUs' render nodes, and ROCm's thunk leaves out every
// GPU whose render node it cannot open, so inside it the GPUs are 0..k-1 in KFD order,
// whichever host GPUs they are: ROCR_VISIBLE_DEVICES says so (the host's 4,5,6,7 would
// match nothing). Host variables that count the host's GPUs (passEnv) never reach it;
// the manifest's own (the container's numbering) do.
func TestAMDVisibleDevicesAreTheContainersNumbers(t *testing.T) {
	root, _ := filepath.Abs("../tests/fixtures/sysfs/mi300x")
	opts := gpu.Options{SysfsRoot: root}
	for _, c := range []struct {
		env  map[string]string
		take int
		want string
	}{
		{map[string]string{"SLURM_JOB_GPUS": "4-7"}, -1, "0,1,2,3"},
		{map[string]string{"SLURM_STEP_GPUS": "1,3"}, -1, "0,1"},
		{map[string]string{"ROCR_VISIBLE_DEVICES": "3,1"}, -1, "0,1"},
		{map[string]string{"SLURM_JOB_GPUS": "4-7"}, 2, "0,1"},
		{map[string]string{"SLURM_JOB_GPUS": "7"}, -1, "0"},
	} {
		acc, err := selectGPUs(manifest.GPU{Vendor: "amd"}, testutil.LookupOf(c.env), opts, "/nonexistent")
		if err != nil {
			t.Fatal(err)
		}
		if acc, err = acc.Take(c.take, "m"); err != nil {
			t.Fatal(err)
		}
		m := &manifest.Manifest{Name: "t", PassEnv: []string{"*"}, Env: []manifest.EnvVar{{Name: "HIP_VISIBLE_DEVICES", Value: "0"}}}
		host := []string{"ROCR_VISIBLE_DEVICES=4,5,6,7", "CUDA_VISIBLE_DEVICES=4,5,6,7", "GPU_DEVICE_ORDINAL=4,5,6,7", "NVIDIA_VISIBLE_DEVICES=4", "OTHER=x"}
		env := containerEnv(t, m, acc, host)
		if env["ROCR_VISIBLE_DEVICES"] != c.want {
			t.Errorf("%v take %d: ROCR_VISIBLE_DEVICES=%q, want %q", c.env, c.take, env["ROCR_VISIBLE_DEVICES"], c.want)
		}
		for _, k := range []string{"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "NVIDIA_VISIBLE_DEVICES"} {
			if v, ok := env[k]; ok {
				t.Errorf("%v: the host's %s=%s reached the container", c.env, k, v)
			}
		}
		if env["HIP_VISIBLE_DEVICES"] != "0" || env["OTHER"] != "x" {
			t.Errorf("%v: the manifest's HIP_VISIBLE_DEVICES or a passed variable was lost: %v", c.env, env)
		}
	}
}

// NVIDIA: NVIDIA_VISIBLE_DEVICES is the toolkit's input and names host GPUs (as the device
// request and CDI devices do); CUDA in the container counts its GPUs from 0, so a host's
// CUDA_VISIBLE_DEVICES=4,5 (Slurm sets it so without device cgroups) must not reach it.
func TestNVIDIAVisibleDevicesAreTheToolkits(t *testing.T) {
	sel := []gpu.GPU{{Index: 4, UUID: "GPU-4"}, {Index: 5}}
	acc, err := access(GPUAccess{Vendor: gpu.VendorNVIDIA, System: sel}, sel)
	if err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{Name: "t", PassEnv: []string{"CUDA_*", "HIP_*", "ROCR_*", "GPU_*"}}
	env := containerEnv(t, m, acc, []string{"CUDA_VISIBLE_DEVICES=4,5", "HIP_VISIBLE_DEVICES=4", "ROCR_VISIBLE_DEVICES=4", "GPU_DEVICE_ORDINAL=4", "CUDA_HOME=/usr/local/cuda"})
	if env["NVIDIA_VISIBLE_DEVICES"] != "GPU-4,5" || env["CUDA_HOME"] != "/usr/local/cuda" {
		t.Errorf("env %v", env)
	}
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"} {
		if v, ok := env[k]; ok {
			t.Errorf("the host's %s=%s reached the container", k, v)
		}
	}
	// Without GPUs from benchmark, the host's variables pass as the globs say.
	if env := containerEnv(t, m, GPUAccess{Vendor: manifest.VendorNone}, []string{"CUDA_VISIBLE_DEVICES=4"}); env["CUDA_VISIBLE_DEVICES"] != "4" {
		t.Errorf("gpu.vendor none: %v", env)
	}
}

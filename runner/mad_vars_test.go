package runner

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func envOf(s Spec) map[string]manifest.EnvVar {
	out := map[string]manifest.EnvVar{}
	for _, e := range s.Env {
		out[e.Name] = e
	}
	return out
}

// A model of scripts/echo_dir/models.json with data: madengine's remaining variables, its
// data mounted at MAD_DATAHOME, and the host's MAD_SECRETS variables as secrets.
func TestMADRemainingVariables(t *testing.T) {
	ds := manifest.DataSet{Name: "fixture_data", Provider: "local", Source: "/nfs/data/fixture", Home: "/data_dlm_0", Size: "44"}
	rw := manifest.DataSet{Name: "scratch", Provider: "local", Source: "/nfs/scratch", Home: "/scratch", ReadWrite: true}
	b := manifest.Benchmark{Name: "echo_dir_echo_infer", Command: []string{"bash", "run.sh"},
		Model: &manifest.Model{Name: "echo_dir/echo_infer", GuestOS: "UBUNTU", Data: "fixture_data,scratch", DataSets: []manifest.DataSet{ds, rw}}}
	acc := amdNode(2)
	acc.Runtime = "6.2.0"
	host := []string{"MAD_SECRETS_HFTOKEN=hf_abcdef123", "X_MAD_SECRETS=other-secret", "BENCHCTL_MAD_SECRETS=no", "HOME=/root"}
	spec := BuildSpec(&manifest.Manifest{Name: "m"}, b, Node{World: 1, MasterAddr: "127.0.0.1", MasterPort: 20000}, "img", "k", "/r", acc, host)
	env := envOf(spec)
	for k, want := range map[string]string{
		"MAD_MODEL_NAME": "echo_dir/echo_infer", "MAD_SYSTEM_HIP_VERSION": "6.2", "MAD_GUEST_OS": "UBUNTU",
		"MAD_DATAHOME": "/data_dlm_0,/scratch", "MAD_DATANAME": "fixture_data,scratch",
	} {
		if env[k].Value != want {
			t.Errorf("%s=%q, want %q", k, env[k].Value, want)
		}
	}
	for _, k := range []string{"MAD_SECRETS_HFTOKEN", "X_MAD_SECRETS"} {
		if !env[k].Secret || env[k].Value == "" {
			t.Errorf("%s: %+v", k, env[k])
		}
	}
	if _, ok := env["BENCHCTL_MAD_SECRETS"]; ok {
		t.Error("a BENCHCTL_ variable reached the container")
	}
	if run := spec.DockerRun(); strings.Contains(run, "hf_abcdef123") || strings.Contains(run, "other-secret") {
		t.Errorf("a secret is printed: %s", run)
	}
	want := []manifest.Mount{{Source: "/nfs/data/fixture", Target: "/data_dlm_0", ReadOnly: true}, {Source: "/nfs/scratch", Target: "/scratch"}, {Source: "/r", Target: OutputDir}}
	if len(spec.Mounts) != len(want) {
		t.Fatalf("mounts %+v", spec.Mounts)
	}
	for i := range want {
		if spec.Mounts[i] != want[i] {
			t.Errorf("mount %d: %+v, want %+v", i, spec.Mounts[i], want[i])
		}
	}

	// A benchmark of the manifest's own gets no MAD_SECRETS; a home the manifest mounts
	// already is left to it.
	own := BuildSpec(&manifest.Manifest{Name: "m"}, manifest.Benchmark{Name: "own", Command: []string{"x"}}, Node{World: 1}, "img", "", "/r", acc, host)
	if _, ok := envOf(own)["MAD_SECRETS_HFTOKEN"]; ok {
		t.Error("MAD_SECRETS reached a benchmark that is no MAD model")
	}
	m := &manifest.Manifest{Name: "m", Mounts: []manifest.Mount{{Source: "/mine", Target: "/data_dlm_0/"}}}
	spec = BuildSpec(m, b, Node{World: 1}, "img", "", "/r", acc, nil)
	if len(spec.Mounts) != 3 || spec.Mounts[0].Source != "/mine" || spec.Mounts[1].Target != "/scratch" {
		t.Errorf("mounts %+v", spec.Mounts)
	}
}

func TestHIPVersion(t *testing.T) {
	for rt, want := range map[string]string{"6.2.0": "6.2", "7.0": "7.0", "12.4": "12.4", "6": "6", "": ""} {
		if got := hipVersion(GPUAccess{Runtime: rt}); got != want {
			t.Errorf("%q: %q, want %q", rt, got, want)
		}
	}
	mad := &manifest.Manifest{Benchmarks: []manifest.Benchmark{{Name: "m", Model: &manifest.Model{}}}}
	if n := hipVersionNote(mad, GPUAccess{Vendor: "amd"}); !strings.Contains(n, "does not know its ROCm or CUDA version") {
		t.Errorf("%q", n)
	}
	if n := hipVersionNote(mad, GPUAccess{Vendor: manifest.VendorNone}); !strings.Contains(n, "without GPUs") {
		t.Errorf("%q", n)
	}
	if n := hipVersionNote(mad, GPUAccess{Vendor: "amd", Runtime: "6.2.0"}); n != "" {
		t.Errorf("%q", n)
	}
	if n := hipVersionNote(&manifest.Manifest{Benchmarks: []manifest.Benchmark{{Name: "own"}}}, GPUAccess{}); n != "" {
		t.Errorf("no MAD model: %q", n)
	}
}

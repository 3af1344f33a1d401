package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// In a MAD checkout, run --tags with madengine's context runs ./models.json's models, each
// on its own Dockerfile for the vendor, with the checkout mounted at /myworkspace where the
// models start; the dry run shows it (the GPUs come from a recorded MI300X).
func TestRunTagsInAMADCheckout(t *testing.T) {
	mad, _ := filepath.Abs("../../tests/fixtures/mad")
	sysfs, _ := filepath.Abs("../../tests/fixtures/sysfs/mi300x")
	t.Chdir(mad)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for vendor, want := range map[string]string{"AMD": "echo.ubuntu.amd.Dockerfile", "NVIDIA": "echo.ubuntu.nvidia.Dockerfile"} {
		args := []string{"run", "--tags", "echo", "--context", `{"gpu_vendor": "` + vendor + `", "docker_env_vars": {"HF_TOKEN": "hf-secret-value"}}`,
			"--dry-run", "-o", "json", "--shared-dir", t.TempDir()}
		if vendor == "AMD" {
			args = append(args, "--sysfs-root", sysfs)
		} else {
			args = append(args, "--context-file", "/dev/null") // both: refused before any GPU is looked for
		}
		code, out, errs := run(t, args...)
		if vendor == "NVIDIA" {
			if code != exitInvalid || !strings.Contains(errs, "--context") {
				t.Errorf("--context with --context-file: exit %d\n%s", code, errs)
			}
			continue
		}
		var plan struct {
			Images []struct {
				Dockerfile string
				Benchmarks []string
			}
			Containers []string
		}
		if code != 0 || json.Unmarshal([]byte(out), &plan) != nil {
			t.Fatalf("%s: exit %d\n%s\n%s", vendor, code, out, errs)
		}
		if len(plan.Images) != 1 || filepath.Base(plan.Images[0].Dockerfile) != want || strings.Join(plan.Images[0].Benchmarks, ",") != "echo_infer,echo_train" {
			t.Errorf("%s: images %+v", vendor, plan.Images)
		}
		for _, c := range plan.Containers {
			if !strings.Contains(c, mad+":/benchctl/checkout:ro") || !strings.Contains(c, "/workspace/echo_") || !strings.Contains(c, " -w /myworkspace/run_directory ") || !strings.Contains(c, "HF_TOKEN=***") || strings.Contains(c, "hf-secret-value") {
				t.Errorf("%s: %s", vendor, c)
			}
		}
	}
	// Not a MAD checkout: exit 4 saying so.
	t.Chdir(t.TempDir())
	if code, _, errs := run(t, "build", "--tags", "vllm"); code != exitInvalid || !strings.Contains(errs, "no models.json in") {
		t.Errorf("outside a checkout: exit %d\n%s", code, errs)
	}
}

// build --push with a reference that is no reference is refused before anything is built
// (no engine is asked), naming the flag: found out now, not after an hour of builds.
func TestBuildPushRefCheckedFirst(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for _, ref := range []string{"Bad Ref", "reg/UPPER:1", strings.Repeat("a", 6000), "reg:5000/x@sha256:short"} {
		code, _, errs := run(t, "build", "-m", "../../models/dummy/benchmark.yaml", "--shared-dir", t.TempDir(), "--push", ref)
		if code != exitInvalid || !strings.Contains(errs, "is not an image reference") || strings.Contains(errs, "not reachable") {
			t.Errorf("%.40q: exit %d\n%.400s", ref, code, errs)
		}
	}
}

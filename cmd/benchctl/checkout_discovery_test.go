package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// In the fixture checkout with a scripts/echo_dir/models.json and a data.json, run --tags
// with a plain tag runs the models of both files, from /myworkspace; the one with data gets
// its data set mounted read-only at MAD_DATAHOME, MAD_DATANAME and its <dir>/<name> as
// MAD_MODEL_NAME; a MAD_SECRETS variable of the host reaches both, shown as ***.
func TestRunTagsDiscoversScriptsModels(t *testing.T) {
	mad, _ := filepath.Abs("../../tests/fixtures/mad-discovery")
	sysfs, _ := filepath.Abs("../../tests/fixtures/sysfs/mi300x")
	t.Chdir(mad)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("MAD_SECRETS_HFTOKEN", "hf-very-secret")
	code, out, errs := run(t, "run", "--tags", "discovery", "--context", `{"gpu_vendor": "AMD"}`, "--dry-run", "-o", "json",
		"--shared-dir", t.TempDir(), "--sysfs-root", sysfs)
	var plan struct {
		Images []struct {
			Dockerfile string
			Benchmarks []string
		}
		Containers []string
	}
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Containers) != 2 || len(plan.Images) != 2 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if plan.Images[1].Dockerfile != filepath.Join(mad, "scripts/echo_dir/docker/echo.ubuntu.amd.Dockerfile") || plan.Images[1].Benchmarks[0] != "echo_dir_echo_infer" {
		t.Errorf("images %+v", plan.Images)
	}
	data := filepath.Join(mad, "data/fixture_data") + ":/data_dlm_0:ro"
	for i, c := range plan.Containers {
		for _, want := range []string{" -w /myworkspace ", "MAD_SECRETS_HFTOKEN=***", "MAD_GUEST_OS=UBUNTU"} {
			if !strings.Contains(c, want) {
				t.Errorf("container %d lacks %q: %s", i, want, c)
			}
		}
		if strings.Contains(c, "hf-very-secret") {
			t.Errorf("a secret is printed: %s", c)
		}
		if with := strings.Contains(c, "MAD_MODEL_NAME=echo_dir/echo_infer"); with != strings.Contains(c, data) ||
			with != strings.Contains(c, "MAD_DATAHOME=/data_dlm_0") || with != strings.Contains(c, "MAD_DATANAME=fixture_data") || with != (i == 1) {
			t.Errorf("container %d: %s", i, c)
		}
	}
}

// build --target-archs takes gfx names; anything else is refused before any build (no
// engine is asked), naming the entry.
func TestBuildTargetArchsChecked(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for arch, want := range map[string]string{
		"gfx90a,MI300X":  `"MI300X" is not a GPU architecture`,
		"GFX942":         "write it in lower case: gfx942",
		"gfx90a,,gfx942": "an empty architecture",
		"gfx942,gfx942":  "gfx942 is given twice",
		"sm_90":          `"sm_90" is not a GPU architecture`,
		"gfx942;rm -rf":  "is not a GPU architecture",
	} {
		code, _, errs := run(t, "build", "-m", "../../models/dummy/benchmark.yaml", "--shared-dir", t.TempDir(), "--target-archs", arch)
		if code != exitInvalid || !strings.Contains(errs, "--target-archs") || !strings.Contains(errs, want) || strings.Contains(errs, "not reachable") {
			t.Errorf("%q: exit %d\n%.400s", arch, code, errs)
		}
	}
}

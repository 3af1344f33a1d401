package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
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
		for _, want := range []string{" -w /myworkspace/run_directory ", ":/myworkspace ", mad + ":/benchctl/checkout:ro", "MAD_SECRETS_HFTOKEN=***", "MAD_GUEST_OS=UBUNTU"} {
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

// In the parity fixture checkout, --tags <dir>:<name> (the echo_model:echo_infer form)
// dry-runs that one model of scripts/<dir>/models.json end to end: its Dockerfile of
// scripts/<dir>/docker, MAD_MODEL_NAME <dir>/<name>, its launcher's variables, its data set
// and the checkout's tools; <dir>:<tag> and <dir>:all select from that folder only, and
// madengine's extra-args form (<model>:k=v) selects nothing and says how to write it.
func TestRunTagsDirColonName(t *testing.T) {
	mad, _ := filepath.Abs("../../tests/fixtures/mad-parity")
	sysfs, _ := filepath.Abs("../../tests/fixtures/sysfs/mi300x")
	t.Chdir(mad)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	dry := func(tags ...string) (int, []string, string) {
		t.Helper()
		args := []string{"run", "--context", `{"gpu_vendor": "AMD"}`, "--tools", "tracer,prepost", "--dry-run", "-o", "json",
			"--shared-dir", t.TempDir(), "--sysfs-root", sysfs}
		for _, tag := range tags {
			args = append(args, "--tags", tag)
		}
		code, out, errs := run(t, args...)
		var plan struct {
			Images []struct {
				Dockerfile string
				Benchmarks []string
			}
			Containers []string
		}
		if code != 0 {
			return code, nil, errs
		}
		if err := json.Unmarshal([]byte(out), &plan); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var names []string
		for _, im := range plan.Images {
			names = append(names, im.Benchmarks...)
			if slices.Contains(im.Benchmarks, "parity_dir_train") && im.Dockerfile != filepath.Join(mad, "scripts/parity_dir/docker/parity.ubuntu.Dockerfile") {
				t.Errorf("%v: parity_dir_train's image is %s", tags, im.Dockerfile)
			}
		}
		if len(plan.Containers) == 1 {
			return code, names, plan.Containers[0]
		}
		return code, names, errs
	}
	code, names, c := dry("parity_dir:train")
	if code != 0 || !slices.Equal(names, []string{"parity_dir_train"}) {
		t.Fatalf("parity_dir:train: exit %d, %v\n%s", code, names, c)
	}
	for _, want := range []string{"MAD_MODEL_NAME=parity_dir/train", "MAD_LAUNCHER_TYPE=megatron-lm",
		"MAD_MULTI_NODE_RUNNER=torchrun --standalone --nproc_per_node=", "PIPELINE_MODEL_PARALLEL_SIZE=1",
		filepath.Join(mad, "data/parity_data") + ":/data_dlm_0:ro", "MAD_DATAHOME=/data_dlm_0", "MAD_DATANAME=parity_data",
		" -w /myworkspace/run_directory ", "bash ../scripts/common/tools/tracer.sh trace", "scripts/common/pre_scripts/mark.sh pre",
		"_bctl_W=$(cd /myworkspace && pwd)", "_bctl_D=/myworkspace/run_directory;", "_bctl_a=(bash run.sh --from parity_dir)"} {
		if !strings.Contains(c, want) {
			t.Errorf("parity_dir:train: the container lacks %q: %s", want, c)
		}
	}
	for tag, want := range map[string][]string{
		"parity_dir:training": {"parity_dir_train"},
		"parity_dir:all":      {"parity_dir_train", "parity_dir_unused"},
		"parity_dir/train":    {"parity_dir_train"},
		"parity":              {"parity_root", "parity_dir_train"},
	} {
		if code, names, errs := dry(tag); code != 0 || !slices.Equal(names, want) {
			t.Errorf("%s: exit %d, %v, want %v\n%s", tag, code, names, want, errs)
		}
	}
	for tag, want := range map[string]string{
		"parity_dir:batch-size=32":  "madengine's extra args (<model>:<key>=<value>), which benchctl does not take",
		"parity_root:batch-size=32": "madengine's extra args",
		"parity_dir:nothing":        "nothing\\\" (its models: parity_dir/train, parity_dir/unused)", // the log quotes its "
		"parity_root:train":         "parity_root:train\\\" selects no model (tags in the catalog: other, parity, training)",
	} {
		if code, names, errs := dry(tag); code != exitInvalid || !strings.Contains(errs, want) || !strings.Contains(errs, "--tags: selects no model") {
			t.Errorf("%s: exit %d, ran %v\n%s", tag, code, names, errs)
		}
	}
}

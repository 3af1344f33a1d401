package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// madengine's real tools (a subset of its tools.json, written for this test) in a dry run:
// each tool's cmd, scripts and variables resolved as they will run, stacked as madengine
// stacks them (the first innermost); a cmd needing a shell is refused (exit 4) naming the
// tool and the operator, and an unknown tool lists the known ones with their file.
func TestRunDryRunShowsMADTools(t *testing.T) {
	fix, _ := filepath.Abs("../../tests/fixtures/tools")
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: tools\nimage: {ref: example.com/x:1}\ngpu: {vendor: none}\nbenchmarks:\n- {name: b, command: [bash, bench.sh], workdir: /myworkspace}\n"), 0o644)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	madtools := filepath.Join(fix, "madtools.json")
	code, out, errs := run(t, "run", "-m", mf, "--tools-file", madtools, "--tools", "rocprofv3,rpd,rocblas_trace,gpu_info_power_profiler",
		"--dry-run", "-o", "json", "--shared-dir", t.TempDir())
	var plan struct {
		Tools      []string
		Containers []string
	}
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Tools) != 4 || len(plan.Containers) != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.HasPrefix(plan.Tools[1], "rpd ("+madtools+":7); cmd: ./rocmProfileData/rpd_tracer/runTracer.sh; pre_scripts: bash scripts/common/pre_scripts/trace.sh rpd; post_scripts: bash scripts/common/post_scripts/trace.sh rpd; env LD_LIBRARY_PATH=") {
		t.Errorf("rpd: %s", plan.Tools[1])
	}
	c := plan.Containers[0]
	for _, want := range []string{
		"--entrypoint bash", "ROCBLAS_TRACE=1", "POWER_SAMPLING_RATE=0.1",
		// the last tool outermost, run in madengine's model directory (./ and ../ words as
		// madengine's)
		`exec python3 ../scripts/common/tools/get_library_trace.py ./rocmProfileData/rpd_tracer/runTracer.sh rocprofv3 --runtime-trace -- "${_bctl_a[@]}" ) &`,
		"_bctl_a=(bash bench.sh)", "/myworkspace/run_directory-benchctl-",
		// the pre scripts of a later tool first
		"_bctl_step pre 0 scripts/common/pre_scripts/gpu_info_pre.sh ||",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("container lacks %q:\n%s", want, c)
		}
	}
	if i, j := strings.Index(c, "gpu_info_power_start.sh"), strings.Index(c, "pre_scripts/trace.sh"); i < 0 || j < i {
		t.Errorf("gpu_info_power_profiler's pre scripts should run before rpd's:\n%s", c)
	}
	code, _, errs = run(t, "run", "-m", mf, "--tools-file", madtools, "--tools", "test_tools_A", "--dry-run", "--shared-dir", t.TempDir())
	if code != exitInvalid || !strings.Contains(errs, "tools.test_tools_A.cmd: tool test_tools_A: \"echo cmd_A && \" needs a shell (it has the operator &&)") || !strings.Contains(errs, madtools+":") {
		t.Errorf("shell operator: exit %d\n%s", code, errs)
	}
	code, _, errs = run(t, "run", "-m", mf, "--tools-file", madtools, "--tools", "rocprof", "--dry-run", "--shared-dir", t.TempDir())
	if code != exitInvalid || !strings.Contains(errs, `"rocprof" is not a known tool; known: rocprofv3 (`+madtools+")") {
		t.Errorf("unknown: exit %d\n%s", code, errs)
	}
	// A shell tool: the dry run says it runs through bash -c.
	code, out, errs = run(t, "run", "-m", mf, "--tools-file", filepath.Join(fix, "tools.json"), "--tools", "shelly", "--dry-run", "--shared-dir", t.TempDir())
	if code != 0 || !strings.Contains(out, `tool:    shelly (`) || !strings.Contains(out, `cmd through bash -c ("shell": true): echo shell-tool-ran &&`) {
		t.Errorf("shell tool: exit %d\n%s\n%s", code, out, errs)
	}
}

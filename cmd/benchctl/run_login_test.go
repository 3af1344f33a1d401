package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// A dry run on a login node (no GPUs of the manifest's vendor) plans without this node's
// GPUs: one warning, the plan with the GPUs the manifest asks for, exit 0. The real run
// there still refuses with exit 4.
func TestDryRunOnALoginNode(t *testing.T) {
	dir := t.TempDir()
	noGPUs := t.TempDir() // a sysfs tree with no KFD topology: no AMD GPUs
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for _, vendor := range []string{"amd", "nvidia"} {
		if vendor == "nvidia" {
			if _, err := gpu.Detect(context.Background(), gpu.Options{Vendor: "nvidia"}); err == nil {
				t.Log("this node has NVIDIA GPUs: the NVIDIA login node is not tested here")
				continue
			}
		}
		m := filepath.Join(dir, vendor+".yaml")
		os.WriteFile(m, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: "+vendor+", count: 8}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
		args := []string{"run", "-m", m, "--shared-dir", t.TempDir(), "--sysfs-root", noGPUs}
		code, out, errs := run(t, append(args, "--dry-run")...)
		if code != 0 {
			t.Fatalf("%s: dry run exit %d\n%s\n%s", vendor, code, out, errs)
		}
		// On a terminal: the same plan (the job id and master port aside), one warning.
		ttyCode, ttyOut, ttyErrs := runAllTTY(t, append(args, "--dry-run")...)
		if ttyCode != 0 || strings.Count(ttyErrs, "WARN") != 1 || planLines(ttyOut) != planLines(out) {
			t.Errorf("%s: on a terminal: exit %d\n%s\n%s", vendor, ttyCode, ttyOut, ttyErrs)
		}
		title := map[string]string{"amd": "AMD", "nvidia": "NVIDIA"}[vendor]
		if n := strings.Count(errs, "WARN"); n != 1 || !strings.Contains(errs, "no "+title+" GPUs found on this node") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: want one warning line saying why, got %d:\n%s", vendor, n, errs)
		}
		wantGPUs := "gpus:    8 " + title + " GPUs, as gpu.count asks (not this node's: the node that runs the job selects them)\n"
		if !strings.Contains(out, wantGPUs) {
			t.Errorf("%s: no %q in\n%s", vendor, wantGPUs, out)
		}
		visible := map[string]string{"amd": "ROCR_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "nvidia": "NVIDIA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"}[vendor]
		if !strings.Contains(out, "gpus:    "+visible+"\n") || !strings.Contains(out, visible+" ") {
			t.Errorf("%s: the plan lacks %s:\n%s", vendor, visible, out)
		}
		// -o json: the same, the warning in the plan too.
		code, out, _ = run(t, append(args, "--dry-run", "-o", "json")...)
		var plan struct {
			GPUs     []string
			Warnings []string
		}
		if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Warnings) != 1 || len(plan.GPUs) != 2 {
			t.Errorf("%s: -o json: exit %d\n%s", vendor, code, out)
		}
		// The real run keeps exit 4.
		if code, _, errs := run(t, args...); code != exitInvalid || !strings.Contains(errs, "no "+title+" GPUs found on this node") {
			t.Errorf("%s: real run: exit %d\n%s", vendor, code, errs)
		}
	}
}

// In a MAD checkout on a login node, run --tags --dry-run plans each model with the GPUs its
// n_gpus asks for (gpu.count all: the most any selected model needs).
func TestDryRunTagsOnALoginNode(t *testing.T) {
	mad, _ := filepath.Abs("../../tests/fixtures/mad")
	noGPUs := t.TempDir()
	t.Chdir(mad)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	code, out, errs := run(t, "run", "--tags", "echo", "--context", `{"gpu_vendor": "AMD"}`, "--dry-run", "--shared-dir", t.TempDir(), "--sysfs-root", noGPUs)
	if code != 0 || strings.Count(errs, "WARN") != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	want := "gpus:    2 AMD GPUs, as n_gpus of echo_train asks (not this node's: the node that runs the job selects them)\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "MAD_RUNTIME_NGPUS=2") {
		t.Errorf("no %q in\n%s", want, out)
	}
}

// runAllTTY is run with stdout and stderr terminals.
func runAllTTY(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	io := iostreams.New(strings.NewReader(""), &out, &errb)
	io.SetStdoutTTY(true)
	io.SetStderrTTY(true)
	code := Execute(context.Background(), args, io)
	return code, out.String(), errb.String()
}

// planLines is a dry run's plan without what differs from run to run: the node line
// (the job id), the master's port, the job folder and the container lines (which name
// the job).
func planLines(plan string) string {
	var keep []string
	for _, l := range strings.Split(plan, "\n") {
		if strings.HasPrefix(l, "gpus:") || strings.HasPrefix(l, "image:") || strings.HasPrefix(l, "  ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// A node that has GPUs the request does not fit (16 asked of 8) is no login node: its dry
// run refuses as its run would, exit 4.
func TestDryRunOnAGPUNodeThatCannotFit(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.yaml")
	os.WriteFile(m, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: amd, count: 16}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	code, out, errs := run(t, "run", "-m", m, "--shared-dir", t.TempDir(), "--sysfs-root", gpuFixtures+"mi300x", "--dry-run")
	if code != exitInvalid || out != "" || !strings.Contains(errs, "16") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

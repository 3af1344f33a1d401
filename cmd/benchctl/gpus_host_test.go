package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
)

// gpus -o json names the host; when several nodes print at once (srun -N 4: SLURM_NTASKS
// or SLURM_STEP_NUM_TASKS above 1) each prints one compact line, so that the four
// documents are JSON lines, and the table's first line names the host too.
func TestGpusNamesTheHost(t *testing.T) {
	host, _ := os.Hostname()
	t.Setenv("SLURM_NTASKS", "")
	t.Setenv("SLURM_STEP_NUM_TASKS", "")
	t.Setenv("SLURM_STEP_ID", "")
	mi300x := []string{"--vendor", "amd", "--sysfs-root", gpuFixtures + "mi300x"}
	out, _, err := runGpus(t, nil, append(mi300x, "-o", "json")...)
	if err != nil || !strings.HasPrefix(out, "{\n  \"host\": "+jsonString(host)+",\n  \"vendor\": \"amd\",\n") {
		t.Fatalf("one node: err %v\n%.200s", err, out)
	}
	out, _, _ = runGpus(t, nil, mi300x...)
	if !strings.HasPrefix(out, "8 AMD GPUs (source sysfs)\n") {
		t.Errorf("one node's table:\n%s", out)
	}
	// The batch script of a 4-task job is one process: indented.
	t.Setenv("SLURM_NTASKS", "4")
	if out, _, _ = runGpus(t, nil, append(mi300x, "-o", "json")...); !strings.HasPrefix(out, "{\n  \"host\"") {
		t.Errorf("SLURM_NTASKS=4 outside a step:\n%.100s", out)
	}
	t.Setenv("SLURM_STEP_ID", "0") // inside the step, SLURM_NTASKS says how many print
	for _, v := range []string{"SLURM_NTASKS", "SLURM_STEP_NUM_TASKS"} {
		t.Setenv(v, "4")
		out, _, err = runGpus(t, nil, append(mi300x, "-o", "json")...)
		var doc struct {
			Host string
			GPUs []gpu.GPU
		}
		if err != nil || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "}\n") || json.Unmarshal([]byte(out), &doc) != nil || doc.Host != host || len(doc.GPUs) != 8 {
			t.Errorf("%s=4: err %v, want one JSON line naming %s:\n%.300s", v, err, host, out)
		}
		out, _, _ = runGpus(t, nil, mi300x...)
		if !strings.HasPrefix(out, host+": 8 AMD GPUs (source sysfs)\n") {
			t.Errorf("%s=4: the table does not name the host:\n%.200s", v, out)
		}
		// No GPUs: the line still says which host has none.
		none := func(context.Context, gpu.Options) (gpu.Inventory, error) {
			return gpu.Inventory{Vendor: "none", GPUs: []gpu.GPU{}}, nil
		}
		if out, errs, err := runGpus(t, none); err != nil || out != "" || errs != host+": no GPUs found\n" {
			t.Errorf("%s=4, none: %v %q %q", v, err, out, errs)
		}
		t.Setenv(v, "")
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// gpus --source amdsmi on a node without the library says why, naming --source (exit 4),
// instead of "no GPUs found" and exit 0.
func TestGpusSourceThatCannotAnswer(t *testing.T) {
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv("ROCM_PATH", "/nonexistent")
	if _, err := gpu.Detect(context.Background(), gpu.Options{Vendor: "amd", AMDSource: "amdsmi"}); err == nil {
		t.Skip("this node has the AMD SMI library")
	}
	for _, c := range []struct {
		source string
		args   []string
	}{
		{"amdsmi", []string{"--source", "amdsmi"}},
		{"amdsmi", []string{"--vendor", "amd", "--source", "amdsmi"}},
		{"sysfs", []string{"--source", "sysfs", "--sysfs-root", t.TempDir()}},
	} {
		out, errs, err := runGpus(t, nil, c.args...)
		if err == nil || exitCode(err) != exitInvalid || !strings.HasPrefix(err.Error(), "--source "+c.source+": no AMD GPUs found on this node: ") || out != "" || strings.Contains(errs, "no GPUs found") {
			t.Errorf("%v: err %v (exit %d), stdout %q, stderr %q", c.args, err, exitCode(err), out, errs)
		}
	}
	if _, _, err := runGpus(t, nil, "--vendor", "nvidia", "--source", "sysfs"); err == nil || exitCode(err) != exitInvalid || !strings.Contains(err.Error(), "--source") {
		t.Errorf("--vendor nvidia --source sysfs: %v", err)
	}
}

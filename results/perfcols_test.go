package results

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// perf.csv fills the madengine columns benchctl knows: the GPUs the containers really got,
// the nodes' GPU architecture, $BUILD_NUMBER, the base image and the build context's commit.
func TestPerfCSVMadengineColumns(t *testing.T) {
	job := writeJob(t, t.TempDir(), "1", 2)
	j, _ := jobdir.ReadJob(jobdirtest.At(job).JobFile())
	j.BuildNumber = "4711"
	j.Image = jobdir.JobImage{ID: "sha256:1", Tag: "t:1", Base: "rocm/pytorch:rocm6.2", GitCommit: "0123456789abcdef0123456789abcdef01234567", BuildSeconds: 42.5}
	if err := jobdir.WriteJob(jobdirtest.At(job).JobFile(), j); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		writeNode(t, job, r, "success", "model,performance\nb,1\n")
		p := nodeOf(job, r).Status()
		st, _ := jobdir.ReadStatus(p)
		st.GPUCount, st.GPUArch, st.GPUName = 8, "gfx942", "AMD Instinct MI300X"
		st.Benchmarks[0].GPUs = 4
		data, _ := json.Marshal(st)
		os.WriteFile(p, data, 0o644)
	}
	s := aggregate(t, job)
	perf := PerfTable(s)
	row := map[string]string{}
	for i, h := range perf.Header {
		row[h] = perf.Rows[0][i]
	}
	for col, want := range map[string]string{
		"gpu_architecture": "gfx942", "n_gpus": "8", "gpus_per_node": "4", "nnodes": "2", "build_number": "4711",
		"base_docker": "rocm/pytorch:rocm6.2", "git_commit": "0123456789abcdef0123456789abcdef01234567", "docker_sha": "sha256:1", "build_duration": "42.5",
	} {
		if row[col] != want {
			t.Errorf("%s = %q, want %q", col, row[col], want)
		}
	}
}

package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// A job whose benchmarks ran on two images: each perf.csv row names its own image (sha,
// tag, Dockerfile as madengine names it, base, commit, build time), and the report says
// which image each benchmark ran on.
func TestPerfCSVPerBenchmarkImages(t *testing.T) {
	shared := t.TempDir()
	job := jobdir.Layout{Shared: shared}.Job("7", 0).Path
	j := &jobdir.Job{Job: "7", World: 1, Nodes: []string{"h0"}}
	man := map[string]any{"name": "mad", "benchmarks": []any{
		map[string]any{"name": "b0", "results": "b.csv", "model": map[string]any{"dockerfile": "docker/echo", "runOptions": "--shm-size 16g -e HF_TOKEN=***"}},
		map[string]any{"name": "b1", "results": "b.csv", "model": map[string]any{"dockerfile": "docker/noop"}}}}
	if err := j.SetManifest(man); err != nil {
		t.Fatal(err)
	}
	echo := jobdir.JobImage{ID: "sha256:e", Tag: "benchctl/mad:e", Dockerfile: "/mad/docker/echo.ubuntu.amd.Dockerfile", Base: "shell:2",
		GitCommit: "1111111111111111111111111111111111111111", BuildSeconds: 3, Benchmarks: []string{"b0"}}
	noop := jobdir.JobImage{ID: "sha256:n", Tag: "benchctl/mad:n", Dockerfile: "/mad/docker/noop.amd.Dockerfile", Base: "scratch", BuildSeconds: 1.5,
		Benchmarks: []string{"b1"}}
	j.Image, j.Images = echo, []jobdir.JobImage{echo, noop}
	if err := os.MkdirAll(jobdirtest.At(job).Nodes(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := jobdir.WriteJob(jobdirtest.At(job).JobFile(), j); err != nil {
		t.Fatal(err)
	}
	resultstest.WriteNodeBenches(t, job, 0, "h0", 2, "model,performance,metric\nm,1,x\n")
	s := resultstest.Aggregate(t, job)
	perf := results.PerfTable(s)
	if len(perf.Rows) != 2 {
		t.Fatalf("%d rows", len(perf.Rows))
	}
	want := []map[string]string{
		{"docker_sha": "sha256:e", "docker_image": "benchctl/mad:e", "docker_file": "docker/echo.ubuntu.amd.Dockerfile", "base_docker": "shell:2",
			"git_commit": "1111111111111111111111111111111111111111", "build_duration": "3", "additional_docker_run_options": "--shm-size 16g -e HF_TOKEN=***"},
		{"docker_sha": "sha256:n", "docker_image": "benchctl/mad:n", "docker_file": "docker/noop.amd.Dockerfile", "base_docker": "scratch",
			"git_commit": "", "build_duration": "1.5", "additional_docker_run_options": ""},
	}
	for i, r := range perf.Rows {
		for col, w := range want[i] {
			if got := r[perf.Col(col)]; got != w {
				t.Errorf("row %d (%s): %s = %q, want %q", i, r[perf.Col("model")], col, got, w)
			}
		}
	}
	if len(s.Images) != 2 {
		t.Errorf("summary images %+v", s.Images)
	}
	var html bytes.Buffer
	if err := WriteReport(&html, s); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"2 images", "image <code>benchctl/mad:e</code>", "image <code>benchctl/mad:n</code>"} {
		if !strings.Contains(html.String(), w) {
			t.Errorf("report lacks %q", w)
		}
	}
}

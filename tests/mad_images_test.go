package tests

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// madManifest writes a manifest over the fixture MAD checkout: each model on its own
// Dockerfile (models.gpuVendor picks them without GPUs), FROM the testbed's shell image.
func madManifest(t *testing.T, tb *testbed.Testbed, gpu, tags string) string {
	t.Helper()
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	mad := repoPath(t, "tests/fixtures/mad")
	body := fmt.Sprintf(`name: mad-images
gpu: {vendor: %s}
image: {buildArgs: {BASE_DOCKER: %q}}
mounts: ["%s:/myworkspace:ro"]
models: {catalog: %s, tags: [%s], gpuVendor: amd}
`, gpu, tb.ShellImage, mad, filepath.Join(mad, "models.json"), tags)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf
}

// readPerf reads a perf.csv into rows keyed by column name.
func readPerf(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 1 {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		row := map[string]string{}
		for i, h := range recs[0] {
			row[h] = r[i]
		}
		out = append(out, row)
	}
	return out
}

// Two MAD models with two Dockerfile prefixes run on 3 nodes, each on its own image: rank 0
// builds both, every worker loads both, each container runs its model's image, and job.json,
// status.json and perf.csv say which ran on which.
func TestMADModelsRunOnTheirOwnImages(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := madManifest(t, tb, "none", "inference, smoke")
	code, dry, derr := benchctlRun(t, tb.Env(), "run", "-m", mf, "--shared-dir", shared, "--dry-run")
	if code != 0 || strings.Count(dry, "image:") != 2 || !strings.Contains(dry, "runs:  echo_infer") || !strings.Contains(dry, "runs:  noop_smoke") ||
		!strings.Contains(dry, "echo.ubuntu.amd.Dockerfile") || !strings.Contains(dry, "noop.amd.Dockerfile") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, dry, derr)
	}
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	j, err := jobdir.ReadJob(jobdir.Layout{Shared: shared}.Job(id, 0).JobFile())
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Images) != 2 {
		t.Fatalf("job.json images: %+v", j.Images)
	}
	ids := map[string]string{} // benchmark -> image id
	for _, im := range j.Images {
		if len(im.Benchmarks) != 1 || im.ID == "" || im.Key == "" || im.Base != tb.ShellImage {
			t.Errorf("job.json image %+v", im)
			continue
		}
		ids[im.Benchmarks[0]] = im.ID
		want := map[string]string{"echo_infer": "echo.ubuntu.amd.Dockerfile", "noop_smoke": "noop.amd.Dockerfile"}[im.Benchmarks[0]]
		if filepath.Base(im.Dockerfile) != want {
			t.Errorf("%s built from %s, want %s", im.Benchmarks[0], im.Dockerfile, want)
		}
	}
	if ids["echo_infer"] == "" || ids["noop_smoke"] == "" || ids["echo_infer"] == ids["noop_smoke"] {
		t.Fatalf("image ids %v", ids)
	}
	for i, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeSuccess || len(s.Benchmarks) != 2 {
			t.Fatalf("%s: %+v", d, s)
		}
		for _, b := range s.Benchmarks {
			if b.Outcome != runner.OutcomeSuccess || b.ImageID != ids[b.Name] {
				t.Errorf("%s %s: %s on %s, want %s", d, b.Name, b.Outcome, b.ImageID, ids[b.Name])
			}
		}
		eng := tb.Engine(t, tb.Nodes[i])
		for name, id := range ids {
			if _, err := eng.ImageInspect(context.Background(), id); err != nil {
				t.Errorf("%s's engine lacks %s's image: %v", tb.Nodes[i], name, err)
			}
		}
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	rows := readPerf(t, jobdir.Layout{Shared: shared}.Job(id, 0).Output(jobdir.PerfFile))
	var seen []string
	for _, r := range rows {
		m := r["model"]
		seen = append(seen, m)
		want := map[string]string{"echo_infer": "docker/echo.ubuntu.amd.Dockerfile", "noop_smoke": "docker/noop.amd.Dockerfile"}[m]
		if r["docker_sha"] != ids[m] || r["docker_file"] != want || r["base_docker"] != tb.ShellImage || r["status"] != "SUCCESS" {
			t.Errorf("perf.csv %s: docker_sha %s docker_file %s base_docker %s status %s", m, r["docker_sha"], r["docker_file"], r["base_docker"], r["status"])
		}
	}
	if slices.Sort(seen); !slices.Equal(seen, []string{"echo_infer", "noop_smoke"}) {
		t.Errorf("perf.csv models %v", seen)
	}
}

// skip_gpu_arch on 3 nodes whose GPU inventory is the recorded MI250X tree (gfx90a):
// echo_train lists gfx90a, so every node skips it before any container starts; the job
// succeeds and perf.csv says SKIPPED.
func TestSkipGPUArchOnARecordedMI250X(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := madManifest(t, tb, "amd", "training")
	id, out, err := runJob(t, tb, mf, shared, true, "--sysfs-root", repoPath(t, "tests/fixtures/sysfs/mi250x"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeSuccess || s.GPUArch != "gfx90a" || len(s.Benchmarks) != 1 ||
			s.Benchmarks[0].Outcome != runner.OutcomeSkipped || !strings.Contains(s.Benchmarks[0].Error, "gfx90a") {
			t.Fatalf("%s: %+v", d, s)
		}
		if _, err := os.Stat(jobdir.Layout{Shared: shared}.Job(id, 0).NodeNamed(d).Log("echo_train")); err == nil {
			t.Errorf("%s: a container ran for a skipped model", d)
		}
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 || !strings.Contains(cout, "SKIPPED") {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	rows := readPerf(t, jobdir.Layout{Shared: shared}.Job(id, 0).Output(jobdir.PerfFile))
	if len(rows) != 1 || rows[0]["model"] != "echo_train" || rows[0]["status"] != "SKIPPED" || rows[0]["gpu_architecture"] != "gfx90a" {
		t.Errorf("perf.csv %v", rows)
	}
}

// build --tags in a MAD checkout, as madengine users build: with gpu_vendor AMD it builds
// exactly the AMD Dockerfiles of the selected models, with NVIDIA exactly the NVIDIA ones,
// and no GPU is needed to build them.
func TestBuildTagsBuildsTheVendorsDockerfiles(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mad := repoPath(t, "tests/fixtures/mad")
	for vendor, want := range map[string][]string{
		"AMD":    {"echo.ubuntu.amd.Dockerfile", "noop.amd.Dockerfile"},
		"NVIDIA": {"echo.ubuntu.nvidia.Dockerfile", "noop.nvidia.Dockerfile"},
	} {
		cmd := exec.Command(tb.Benchctl(t), "build", "--tags", "echo,smoke", "--context", `{"gpu_vendor": "`+vendor+`", "docker_build_arg": {"BASE_DOCKER": "`+tb.ShellImage+`"}}`,
			"--shared-dir", shared, "--record", filepath.Join(shared, vendor+".json"))
		cmd.Dir = mad
		cmd.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", vendor, err, out)
		}
		for _, w := range []string{"IMAGE", "echo_infer,echo_train", "noop_smoke", want[0], want[1]} {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: the summary lacks %q:\n%s", vendor, w, out)
			}
		}
		recs, err := image.ReadRecords(filepath.Join(shared, vendor+".json"))
		if err != nil || len(recs) != 2 {
			t.Fatalf("%s: records %v %v", vendor, recs, err)
		}
		var got []string
		eng := tb.Engine(t, tb.Nodes[0])
		for _, r := range recs {
			got = append(got, filepath.Base(r.Dockerfile))
			res, err := eng.ImageInspect(context.Background(), r.ImageID)
			if err != nil || res.Config == nil || res.Config.Labels["vendor"] != strings.ToLower(vendor) {
				t.Errorf("%s: image %s of %s: %v %+v", vendor, r.ImageID, r.Dockerfile, err, res.Config)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: built %v, want %v", vendor, got, want)
		}
	}
}

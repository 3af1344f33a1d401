package tests

import (
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

// A MAD checkout with a scripts/<dir>/models.json and a data.json runs on every node as
// madengine runs it: the plain tag selects the models of both files, each builds its own
// Dockerfile and starts in its run directory (/myworkspace/run_directory, a copy of its
// script's folder in the node's own workspace), the scripts/echo_dir model reads its data set where
// MAD_DATAHOME says and gets the host's MAD_SECRETS variable, and perf.csv's data columns say
// which data it read.
func TestMADCheckoutDiscoveryAndData(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no base image with a shell: run tests/testbed/up.sh again")
	}
	shared := tb.FreshDir(t)
	mad := repoPath(t, "tests/fixtures/mad-discovery")
	body := fmt.Sprintf(`name: mad-discovery
gpu: {vendor: none}
image: {buildArgs: {BASE_DOCKER: %q}}
mounts: ["%s:/myworkspace:ro"]
models: {catalog: %s, tags: [discovery], gpuVendor: amd}
`, tb.ShellImage, mad, filepath.Join(mad, "models.json"))
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "e2e-mad-secret-value"
	t.Setenv("MAD_SECRETS_E2E", secret)
	id, out, err := runJob(t, tb, mf, shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	for _, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		var names []string
		for _, b := range s.Benchmarks {
			names = append(names, b.Name)
		}
		if s.Outcome != runner.OutcomeSuccess || !slices.Equal(names, []string{"root_echo", "echo_dir_echo_infer"}) {
			t.Fatalf("%s: %+v", d, s)
		}
		log, _ := os.ReadFile(job.NodeNamed(d).Log("echo_dir_echo_infer"))
		for _, want := range []string{"model echo_dir/echo_infer in /myworkspace/run_directory, args: --from echo_dir",
			"guest os 'UBUNTU', hip '', secret given", "data fixture_data at /data_dlm_0: fixture data for benchctl's discovery tests"} {
			if !strings.Contains(string(log), want) {
				t.Errorf("%s: the log lacks %q:\n%s", d, want, log)
			}
		}
		root, _ := os.ReadFile(job.NodeNamed(d).Log("root_echo"))
		if !strings.Contains(string(root), "model root_echo in /myworkspace/run_directory, args: --from root") {
			t.Errorf("%s root_echo log:\n%s", d, root)
		}
		st, _ := os.ReadFile(job.NodeNamed(d).Status())
		if strings.Contains(string(st), secret) {
			t.Errorf("%s: status.json holds the secret", d)
		}
	}
	if j, _ := os.ReadFile(job.JobFile()); strings.Contains(string(j), secret) {
		t.Error("job.json holds the secret")
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	sample, err := os.Stat(filepath.Join(mad, "data/fixture_data/sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows := readPerf(t, job.Output(jobdir.PerfFile))
	var seen []string
	for _, r := range rows {
		seen = append(seen, r["model"])
		want := map[string]string{"dataname": "", "data_provider_type": "", "data_size": "", "data_download_duration": ""}
		if strings.Contains(r["model"], "echo_infer") {
			want = map[string]string{"dataname": "fixture_data", "data_provider_type": "local", "data_size": fmt.Sprint(sample.Size()), "data_download_duration": "0"}
		}
		for col, v := range want {
			if r[col] != v {
				t.Errorf("perf.csv %s: %s = %q, want %q", r["model"], col, r[col], v)
			}
		}
		if r["status"] != "SUCCESS" {
			t.Errorf("perf.csv %s: %s", r["model"], r["status"])
		}
	}
	if slices.Sort(seen); !slices.Equal(seen, []string{"echo_dir/echo_infer", "root_echo"}) {
		t.Errorf("perf.csv models %v", seen)
	}
}

// build --target-archs in a MAD checkout builds the selected model's Dockerfile once per
// architecture, each with madengine's MAD_SYSTEM_GPU_ARCHITECTURE build arg: two images,
// two keys, two records.
func TestBuildTargetArchs(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	rec := filepath.Join(shared, "archs.json")
	cmd := exec.Command(tb.Benchctl(t), "build", "--tags", "inference", "--context", `{"gpu_vendor": "AMD", "docker_build_arg": {"BASE_DOCKER": "`+tb.ShellImage+`"}}`,
		"--target-archs", "gfx90a,gfx942", "--shared-dir", shared, "--record", rec)
	cmd.Dir = repoPath(t, "tests/fixtures/mad")
	cmd.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	recs, err := image.ReadRecords(rec)
	if err != nil || len(recs) != 2 || recs[0].Key == recs[1].Key {
		t.Fatalf("records %+v %v\n%s", recs, err, out)
	}
	for i, arch := range []string{"gfx90a", "gfx942"} {
		if !slices.Contains(recs[i].BuildArgs, image.KeyValue{Name: "MAD_SYSTEM_GPU_ARCHITECTURE", Value: arch}) || filepath.Base(recs[i].Dockerfile) != "echo.ubuntu.amd.Dockerfile" {
			t.Errorf("record %d: %+v", i, recs[i])
		}
	}
}

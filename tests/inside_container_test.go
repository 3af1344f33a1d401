package tests

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// insideImage imports, into every node's engine, an image holding only benchctl's static
// build and a shell (Debian's static busybox): the stand-in for the container someone else
// starts (pyxis, enroot, Apptainer). It returns the image's name.
func insideImage(t *testing.T, tb *testbed.Testbed) string {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	add := func(name string, mode int64, body []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	dir := func(name string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o1777, Typeflag: tar.TypeDir}); err != nil {
			t.Fatal(err)
		}
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("the testbed's static busybox: %v", err)
	}
	bin, err := os.ReadFile(tb.BenchctlStatic(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bin/", "etc/", "tmp/", "usr/", "usr/local/", "usr/local/bin/"} {
		dir(d)
	}
	add("bin/busybox", 0o755, busybox)
	for _, app := range []string{"sh", "cat", "ls", "env"} {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + app, Linkname: "busybox", Typeflag: tar.TypeSymlink, Mode: 0o777}); err != nil {
			t.Fatal(err)
		}
	}
	add("usr/local/bin/benchctl", 0o755, bin)
	add("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("benchctl-e2e/inside:%d", time.Now().UnixNano())
	for _, n := range tb.Nodes {
		e := tb.Engine(t, n)
		res, err := e.ImageImport(context.Background(), client.ImageImportSource{Source: bytes.NewReader(layer.Bytes()), SourceName: "-"}, ref,
			client.ImageImportOptions{Changes: []string{"ENV PATH=/usr/local/bin:/bin"}})
		if err != nil {
			t.Fatalf("%s: importing %s: %v", n, ref, err)
		}
		io.Copy(io.Discard, res)
		res.Close()
		t.Cleanup(func() { e.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true}) })
	}
	return ref
}

// benchctl inside someone else's container (the stand-in for pyxis and Apptainer): the
// sbatch script's srun starts, on each node, a plain `docker run --network host` of an image
// that holds only the static benchctl and a shell, with no engine socket inside, mounting the
// shared directory (and the recorded GPU tree) at their own paths; in it, benchctl runs the
// benchmark with runtime: process. The job completes on the 3 nodes, its cleanup step runs
// in the same container, nothing of the job is left, and collect makes one perf.csv.
func TestProcessRuntimeInsideAContainer(t *testing.T) {
	tb := testbed.Require(t)
	image := insideImage(t, tb)
	shared := tb.FreshDir(t)
	work := filepath.Join(shared, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// The benchmark program lives on the shared filesystem, as a site's software would.
	dummy, err := os.ReadFile(repoPath(t, "models/dummy/bin/dummy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "dummy"), dummy, 0o755); err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(work, "benchmark.yaml")
	body := fmt.Sprintf("name: inside\nruntime: process\nimage: {ref: %s}\ngpu: {vendor: amd, count: 2}\nbenchmarks:\n"+
		"  - {name: dummy, command: [%s, --rows, \"2\"], timeout: 15m, results: dummy.csv}\n", image, filepath.Join(work, "dummy"))
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	sysfs := repoPath(t, "tests/fixtures/sysfs/mi250x")
	// Every Slurm variable of the task goes into the container (pyxis passes the task's
	// environment); DOCKER_HOST (the testbed's TaskProlog) names the node's engine to the
	// docker client on the node, and does not reach the container.
	inside := func(args string) string {
		return `srun --ntasks-per-node=1 sh -c 'env | grep "^SLURM" >"` + work + `/env.$SLURM_NODEID" && ` +
			`exec docker run --rm --network host --env-file "` + work + `/env.$SLURM_NODEID" ` +
			`-v ` + shared + `:` + shared + ` -v ` + sysfs + `:` + sysfs + `:ro ` + image + ` benchctl ` + args + `'`
	}
	script := filepath.Join(work, "job.sh")
	out := filepath.Join(work, "job.out")
	body = "#!/bin/sh\n" +
		inside(`run --manifest `+mf+` --shared-dir `+shared+` --barrier-timeout 3m --sysfs-root `+sysfs) + "\nrc=$?\n" +
		inside(`cleanup --job "$SLURM_JOB_ID" --runtime process --shared-dir `+shared) + " || rc=$?\nexit $rc\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", "--parsable", "--wait", "-N", fmt.Sprint(len(tb.Nodes)), "--ntasks-per-node=1",
		"-p", tb.Partition, "-o", out, "-J", "e2e-inside", "-D", work, script)
	cmd.Env = tb.Env()
	stdout, err := cmd.Output()
	log, _ := os.ReadFile(out)
	id := strings.TrimSpace(strings.Split(string(stdout), ";")[0])
	if err != nil || id == "" {
		t.Fatalf("sbatch: %v\n%s", err, log)
	}
	if n := strings.Count(string(log), "nothing to clean up for job "+id); n != len(tb.Nodes) {
		t.Errorf("the cleanup step ran in %d containers, want %d:\n%s", n, len(tb.Nodes), log)
	}
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	for rank, d := range nodeDirs(tb) {
		s := readStatus(t, shared, id, d)
		if s.Outcome != runner.OutcomeSuccess || len(s.Benchmarks) != 1 || s.Benchmarks[0].Outcome != runner.OutcomeSuccess {
			t.Fatalf("%s: %+v\n%s", d, s, log)
		}
		l, _ := os.ReadFile(job.NodeNamed(d).Log("dummy"))
		if !strings.Contains(string(l), fmt.Sprintf("node rank %d of 3", rank)) {
			t.Errorf("%s: the benchmark's log does not say its rank:\n%s", d, l)
		}
		rec, _ := os.ReadFile(filepath.Join(job.NodeNamed(d).Path, jobdir.NodeRecordFile))
		if !strings.Contains(string(rec), `"process"`) {
			t.Errorf("%s: node.json does not say the process runtime:\n%s", d, rec)
		}
	}
	jj, _ := os.ReadFile(job.JobFile())
	if !strings.Contains(string(jj), image) {
		t.Errorf("job.json does not record the image the user named:\n%s", jj)
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	rows := readPerf(t, job.Output(jobdir.PerfFile))
	if len(rows) == 0 {
		t.Fatal("no rows in perf.csv")
	}
	for _, r := range rows {
		if r["status"] != "SUCCESS" || r["gpus_per_node"] != "2" || r["perf_nodes"] != "3" {
			t.Errorf("perf.csv row %v", r)
		}
	}
	// The static build says what it reads GPUs with (no NVML without cgo).
	ver := exec.Command("docker", "run", "--rm", image, "benchctl", "version", "--no-engine")
	ver.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	if out, err := ver.CombinedOutput(); err != nil || !strings.Contains(string(out), "gpus:     CGO_ENABLED=0: NVIDIA GPUs through nvidia-smi (no NVML") {
		t.Errorf("benchctl version of the static build: %v\n%s", err, out)
	}
	waitNoProcesses(t, id)
}

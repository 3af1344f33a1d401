// Command distribution-bench measures the image phase of a cold 3-node job on the testbed
// (tests/testbed/up.sh must be up): distribution: cache (rank 0 saves the image into the
// shared cache, then every other node loads it from there) against distribution: stream
// (rank 0's one docker save feeds the chain of nodes, each loading while it forwards, and
// the cache entry at the same time).
//
// The image (one incompressible layer of -size MiB) is built once on n1. Before every job
// the other nodes' engines lose it and the cache entry is removed, so each job is cold but
// for rank 0's engine: the time measured is distribution alone, not the build. The time is
// rank 0's "image" phase (from its start to every node having the image and arriving at
// the ready barrier), from status.json. The two modes alternate, starting with the other
// one at every repetition. Usage:
//
//	make build && go run ./bench/distribution [-size 1024] [-reps 5] [-bin bin/benchctl] [-keep]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/bench/internal/engines"
	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/tests/testbed"
)

func main() {
	sizeMiB := flag.Int("size", 1024, "image payload in MiB")
	reps := flag.Int("reps", 5, "repetitions (the median is reported)")
	bin := flag.String("bin", "bin/benchctl", "the benchctl binary every node runs")
	keep := flag.Bool("keep", false, "keep the work folder (the jobs' logs and folders)")
	flag.Parse()
	tb, err := testbed.Read(testbed.EnvFile())
	if err != nil {
		log.Fatalf("no testbed: %v (run tests/testbed/up.sh)", err)
	}
	if len(tb.Nodes) < 3 {
		log.Fatalf("the testbed has %d nodes; this needs 3", len(tb.Nodes))
	}
	benchctl, err := filepath.Abs(*bin)
	timing.Check(err)
	work, err := os.MkdirTemp(tb.SharedDir, "dist-bench-")
	timing.Check(err)
	if *keep {
		log.Printf("work folder (kept): %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	shared := filepath.Join(work, "shared")
	timing.Check(os.MkdirAll(shared, 0o755))

	ctxDir := filepath.Join(work, "ctx")
	timing.Check(os.MkdirAll(ctxDir, 0o755))
	timing.Check(os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM "+tb.ShellImage+"\nCOPY payload.bin /payload.bin\n"), 0o644))
	engines.WriteRandom(filepath.Join(ctxDir, "payload.bin"), int64(*sizeMiB)<<20)
	manifests := map[string]string{}
	for _, mode := range []string{manifest.DistributionCache, manifest.DistributionStream} {
		mf := filepath.Join(work, mode+".yaml")
		timing.Check(os.WriteFile(mf, []byte(fmt.Sprintf("name: dist-bench\nimage: {dockerfile: %s, context: %s}\ngpu: {vendor: none}\ndistribution: %s\n"+
			"benchmarks:\n  - {name: b, command: [/bin/sh, -c, 'echo performance: 1 x'], timeout: 5m}\n",
			filepath.Join(ctxDir, "Dockerfile"), ctxDir, mode)), 0o644))
		manifests[mode] = mf
	}

	log.Printf("building a %d MiB image on %s", *sizeMiB, tb.Nodes[0])
	build := exec.Command(benchctl, "build", "-m", manifests[manifest.DistributionCache], "--shared-dir", shared, "-o", "json")
	build.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		log.Fatalf("benchctl build: %v\n%s", err, out)
	}
	cache, err := image.OpenCache(shared)
	timing.Check(err)
	entries, err := cache.List()
	timing.Check(err)
	if len(entries) != 1 {
		log.Fatalf("%d cache entries after the build, want 1", len(entries))
	}
	key, id := entries[0].Key, entries[0].ImageID
	engs := make([]*client.Client, len(tb.Nodes))
	for i, n := range tb.Nodes {
		engs[i] = engines.Connect(tb.Sockets[n])
	}
	defer func() {
		for _, e := range engs {
			engines.RemoveImage(e, id)
		}
	}()

	script := filepath.Join(work, "job.sh")
	// Each task's shell records the CPU time of its benchctl (its waited-for children's, from
	// /proc/$$/stat) in work/cpu.<node>.
	timing.Check(os.WriteFile(script, []byte("#!/bin/sh\nexec srun --ntasks-per-node=1 sh -c '\""+benchctl+"\" run --manifest \"$BENCH_MANIFEST\" --shared-dir \""+shared+"\"; rc=$?; "+
		"awk \"{print \\$16+\\$17}\" /proc/$$/stat >\""+work+"\"/cpu.$SLURMD_NODENAME; exit $rc'\n"), 0o755))
	times := map[string][]time.Duration{}
	benchCPU, engineCPU := map[string][]time.Duration{}, map[string][]time.Duration{}
	modes := []string{manifest.DistributionCache, manifest.DistributionStream}
	for r := 0; r < *reps; r++ {
		for i := range modes {
			mode := modes[(i+r)%len(modes)]
			for _, e := range engs[1:] {
				engines.RemoveImage(e, id)
			}
			timing.Check(cache.Remove(key))
			before := enginesCPU()
			d := job(tb, script, manifests[mode], work, mode)
			ec, bc := enginesCPU()-before, benchctlCPU(work, tb.Nodes[:3])
			times[mode] = append(times[mode], d)
			engineCPU[mode], benchCPU[mode] = append(engineCPU[mode], ec), append(benchCPU[mode], bc)
			log.Printf("rep %d: %s: image phase %.2f s; CPU: engines %.1f s, benchctl %.1f s", r+1, mode, d.Seconds(), ec.Seconds(), bc.Seconds())
		}
	}
	c, s := timing.Median(times[manifest.DistributionCache]), timing.Median(times[manifest.DistributionStream])
	fmt.Printf("| %d MiB image, 3 nodes, cold, median of %d | cache (save, then loads) | stream | ratio | target |\n|---|---|---|---|---|\n", *sizeMiB, *reps)
	fmt.Printf("| rank 0's image phase | %.2f s | %.2f s | %.2f × | ≤ 0.7 × |\n", c.Seconds(), s.Seconds(), s.Seconds()/c.Seconds())
	for _, row := range []struct {
		what string
		m    map[string][]time.Duration
	}{{"CPU of the Docker Engines (dockerd, containerd), the whole job", engineCPU}, {"CPU of benchctl, the 3 ranks together, the whole job", benchCPU}} {
		c, s := timing.Median(row.m[manifest.DistributionCache]), timing.Median(row.m[manifest.DistributionStream])
		fmt.Printf("| %s | %.1f s | %.1f s | %.2f × | |\n", row.what, c.Seconds(), s.Seconds(), s.Seconds()/c.Seconds())
	}
}

// enginesCPU is the CPU time (user + system) the testbed's Docker Engines have used so far:
// every dockerd, containerd and containerd-shim process on this machine.
func enginesCPU() time.Duration {
	ents, err := os.ReadDir("/proc")
	timing.Check(err)
	var ticks int64
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		comm := s[open+1 : end]
		if comm != "dockerd" && !strings.HasPrefix(comm, "containerd") {
			continue
		}
		f := strings.Fields(s[end+1:]) // f[0] is field 3 (state): utime is field 14, stime 15
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + st
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// benchctlCPU sums what the job's tasks recorded of their benchctl's CPU time (in ticks).
func benchctlCPU(work string, nodes []string) time.Duration {
	var ticks int64
	for _, n := range nodes {
		data, err := os.ReadFile(filepath.Join(work, "cpu."+n))
		timing.Check(err)
		v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		timing.Check(err)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100
}

// job runs one 3-node job and returns rank 0's image phase, after checking that every node
// succeeded and that the image went the way mode says.
func job(tb *testbed.Testbed, script, mf, work, mode string) time.Duration {
	cmd := exec.Command("sbatch", "--parsable", "--wait", "-N", "3", "--ntasks-per-node=1", "-p", tb.Partition,
		"-o", filepath.Join(work, "job-%j.out"), script)
	cmd.Env = append(tb.Env(), "BENCH_MANIFEST="+mf)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	id := strings.TrimSpace(strings.Split(string(out), ";")[0])
	if id == "" {
		log.Fatalf("sbatch gave no job id: %v", err)
	}
	if err != nil {
		data, _ := os.ReadFile(filepath.Join(work, "job-"+id+".out"))
		log.Fatalf("job %s (%s) failed: %v\n%s", id, mode, err, data)
	}
	dir := jobdir.Layout{Shared: filepath.Join(work, "shared")}.Job(id, 0)
	j, err := jobdir.ReadJob(dir.JobFile())
	timing.Check(err)
	if j.Image.Distribution != mode {
		log.Fatalf("job %s: the image went by %q, want %s", id, j.Image.Distribution, mode)
	}
	var phase time.Duration
	for rank, n := range tb.Nodes[:3] {
		st, err := jobdir.ReadStatus(dir.Node(rank, n).Status())
		timing.Check(err)
		if st.Outcome != jobdir.OutcomeSuccess {
			log.Fatalf("job %s: rank %d: %s: %s", id, rank, st.Outcome, st.Error)
		}
		if rank != 0 {
			continue
		}
		for _, p := range st.Phases {
			if p.Name == jobdir.PhaseImage && p.FinishedAt != nil {
				phase = p.FinishedAt.Sub(p.StartedAt)
			}
		}
	}
	if phase == 0 {
		log.Fatalf("job %s: rank 0 recorded no image phase", id)
	}
	return phase
}

// Command run-bench compares `benchctl run` of a one-node job with a plain `docker run` of
// the same warm image and command on the same engine (the testbed's n1):
//
//	go build -o bin/benchctl ./cmd/benchctl && go run ./bench/run [-reps 10]
//
// Both sides start a container, wait for it and remove it; benchctl also resolves the
// manifest and key, checks the engine has the image, writes status.json and streams logs.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/tests/testbed"
)

func main() {
	reps := flag.Int("reps", 10, "repetitions (the median is reported)")
	bin := flag.String("benchctl", "bin/benchctl", "benchctl binary")
	flag.Parse()
	tb, err := testbed.Read(testbed.EnvFile())
	if err != nil {
		log.Fatalf("no testbed: %v (run tests/testbed/up.sh)", err)
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		log.Fatal("the docker CLI is needed for the raw side")
	}
	shared, err := os.MkdirTemp(tb.SharedDir, "run-bench-")
	timing.Check(err)
	defer os.RemoveAll(shared)
	env := append(os.Environ(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]])
	manifest, _ := filepath.Abs("models/dummy/benchmark.yaml")

	// Warm up: build and publish the image, so both sides run a warm container.
	warm := exec.Command(*bin, "run", "-m", manifest, "--shared-dir", shared)
	warm.Env = env
	out, err := warm.CombinedOutput()
	if err != nil {
		log.Fatalf("warm-up: %v\n%s", err, out)
	}
	tag := ""
	dry := exec.Command(*bin, "run", "-m", manifest, "--shared-dir", shared, "--dry-run", "-o", "json")
	dry.Env = env
	if out, err := dry.Output(); err == nil {
		var p struct{ Images []struct{ Ref string } }
		_ = json.Unmarshal(out, &p)
		if len(p.Images) > 0 {
			tag = p.Images[0].Ref
		}
	}
	if tag == "" {
		log.Fatal("could not learn the image tag")
	}
	var raw, ours []time.Duration
	for i := 0; i < *reps; i++ {
		r := exec.Command(docker, "run", "--rm", "--network", "host", "--entrypoint", "/dummy", tag, "--rows", "3")
		r.Env = env
		raw = append(raw, timing.Time(func() {
			if out, err := r.CombinedOutput(); err != nil {
				log.Fatalf("docker run: %v\n%s", err, out)
			}
		}))
		b := exec.Command(*bin, "run", "-m", manifest, "--shared-dir", shared, "--log-level", "warn")
		b.Env = env
		ours = append(ours, timing.Time(func() {
			if out, err := b.CombinedOutput(); err != nil {
				log.Fatalf("benchctl run: %v\n%s", err, out)
			}
		}))
	}
	mr, mo := timing.Median(raw), timing.Median(ours)
	fmt.Printf("| warm one-node run, median of %d | docker run | benchctl run | ratio | target |\n|---|---|---|---|---|\n", *reps)
	fmt.Printf("| dummy (3 rows) | %.0f ms | %.0f ms | %.2f × | ≤ 1.2 × |\n", ms(mr), ms(mo), mo.Seconds()/mr.Seconds())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

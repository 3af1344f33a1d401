// Command run-bench compares `benchctl run` of a one-node job with a plain `docker run` of
// the same warm image and command on the same engine (the testbed's n1):
//
//	make build examples && go run ./bench/run [-reps 10]
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
	if _, err := os.Stat("models/dummy/bin/dummy"); err != nil {
		log.Fatalf("the dummy example is not built (run make examples, in the checkout's root): %v", err)
	}

	// Warm up: build and publish the image, so both sides run a warm container.
	warm := exec.Command(*bin, "run", "-m", manifest, "--shared-dir", shared)
	warm.Env = env
	out, err := warm.CombinedOutput()
	if err != nil {
		log.Fatalf("warm-up: %v\n%s", err, out)
	}
	// The warm-up's node ran the image by its id: the engine may hold the image under
	// another tag, or none (an engine that had the key's image before), so the raw side
	// runs the same id, from the node's status.json.
	image, err := imageOfRun(shared)
	if err != nil {
		log.Fatalf("the warm-up's image: %v", err)
	}
	var raw, ours []time.Duration
	for i := 0; i < *reps; i++ {
		r := exec.Command(docker, "run", "--rm", "--network", "host", "--entrypoint", "/dummy", image, "--rows", "3")
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

// imageOfRun is the image id the one node of the only job in shared ran.
func imageOfRun(shared string) (string, error) {
	files, err := filepath.Glob(filepath.Join(shared, "jobs", "*", "nodes", "*", "status.json"))
	if err != nil || len(files) != 1 {
		return "", fmt.Errorf("want one node status in %s, found %d (%v)", shared, len(files), err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return "", err
	}
	var st struct {
		ImageID string `json:"imageId"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.ImageID == "" {
		return "", fmt.Errorf("%s: no imageId (%v)", files[0], err)
	}
	return st.ImageID, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

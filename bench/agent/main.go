// Command agent-bench compares the remote launch of a trivial command through benchctl's
// agent with the same command through `docker exec`, on the testbed's engines:
//
//	tests/testbed/up.sh && go run ./bench/agent [-n 1000]
//
// The raw side is the docker CLI, `docker exec CONTAINER /bin/true`, against node n2's
// engine. The agent's side is what an MPI launcher does to start a daemon on n2: the agent
// (its own process, as the launcher runs it) asks rank 0's benchctl through its socket with
// the job's token, rank 0's benchctl opens an authenticated link of the job channel to
// n2's, which runs the command beside n2's benchmark (an exec of the Engine API, under the
// agent's wrapper, through /bin/sh -c as sshd does), and stdout, stderr and the exit status
// come back. The services are in this process (rank 0's and n2's); the container is one
// of the testbed's MPI image on n2's engine. The target is the issue's: at most 1.2 × docker exec.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/bench/internal/engines"
	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/internal/agentwire"
	"github.com/benchctl/benchctl/jobchan"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/remote"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

func main() {
	n := flag.Int("n", 1000, "commands launched on each side")
	flag.Parse()
	env := map[string]string{}
	file := os.Getenv("BENCHCTL_TESTBED_ENV")
	if file == "" {
		file = "/var/tmp/bctb/testbed.env"
	}
	b, err := os.ReadFile(file)
	timing.Check(err)
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "="); ok {
			env[k] = v
		}
	}
	img := env["BENCHCTL_TESTBED_MPI_IMAGE"]
	if img == "" {
		log.Fatal("the testbed has no MPI image: run tests/testbed/up.sh")
	}
	socks := strings.Split(env["BENCHCTL_TESTBED_SOCKETS"], ",")
	if len(socks) < 2 {
		log.Fatal("the testbed has fewer than 2 nodes: run tests/testbed/up.sh")
	}
	host := socks[1] // n2's engine
	work, err := os.MkdirTemp("", "agent-bench-")
	timing.Check(err)
	defer os.RemoveAll(work)
	bin := filepath.Join(work, remote.AgentName)
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/benchctl-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		log.Fatalf("building the agent: %v\n%s", err, out)
	}
	dir, err := remote.AgentFolder(bin)
	timing.Check(err)
	defer os.RemoveAll(dir)

	// n2's benchmark: the agent's wait in the MPI image, the agent's folder mounted.
	api := engines.Connect(host)
	rt := engine.New(api)
	ctx := context.Background()
	id, err := rt.Create(ctx, workload.Spec{Name: fmt.Sprintf("agent-bench-%d", os.Getpid()), Image: img,
		Command: []string{remote.AgentPath(false, dir), "wait"}, Network: "host",
		Mounts: []manifest.Mount{{Source: dir, Target: remote.AgentDir, ReadOnly: true}}})
	timing.Check(err)
	defer rt.Remove(context.Background(), id)
	timing.Check(rt.Start(ctx, id))

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := func(rank int) jobchan.Config {
		return jobchan.Config{Job: "bench.0", Rank: rank, World: 3, Hosts: []string{"n1", "n2", "n3"}, Secret: []byte("bench-secret"),
			AddrOf: func(int) string { return "127.0.0.1" }}
	}
	n2, err := remote.Start(remote.Config{Chan: cfg(1), RT: rt, Agent: remote.AgentPath(false, dir), Log: logger})
	timing.Check(err)
	defer n2.Close()
	n2.Running("bench", id)
	r0, err := remote.Start(remote.Config{Chan: cfg(0), RT: rt, Agent: remote.AgentPath(false, dir), Log: logger})
	timing.Check(err)
	defer r0.Close()
	r0.SetPeers(map[int]string{1: n2.Addr()})
	sock := filepath.Join(dir, agentwire.SocketName)
	timing.Check(r0.ServeAgent(sock))
	r0.Launching("bench", 3)

	agent := func() {
		c := exec.Command(bin, "n2", "/bin/true")
		c.Env = []string{agentwire.EnvSocket + "=" + sock, agentwire.EnvToken + "=" + r0.TokenValue()}
		if out, err := c.CombinedOutput(); err != nil {
			log.Fatalf("agent: %v\n%s", err, out)
		}
	}
	container := containerName(api, id)
	raw := func() {
		c := exec.Command("docker", "exec", container, "/bin/true")
		c.Env = append(os.Environ(), "DOCKER_HOST="+host)
		if out, err := c.CombinedOutput(); err != nil {
			log.Fatalf("docker exec: %v\n%s", err, out)
		}
	}
	agent() // warm-up
	raw()
	var rs, as []time.Duration
	start := time.Now()
	for i := range *n {
		rs = append(rs, timing.Time(raw))
		as = append(as, timing.Time(agent))
		if (i+1)%100 == 0 {
			fmt.Fprintf(os.Stderr, "%d of %d (%s)\n", i+1, *n, time.Since(start).Round(time.Second))
		}
	}
	sum := func(d []time.Duration) (t time.Duration) {
		for _, x := range d {
			t += x
		}
		return t
	}
	tr, ta := sum(rs), sum(as)
	verdict := "met"
	if ta.Seconds() > 1.2*tr.Seconds() {
		verdict = "NOT met"
	}
	fmt.Printf("| %d remote launches of /bin/true on n2 | docker exec | benchctl-agent | ratio (target ≤ 1.2 ×) |\n|---|---|---|---|\n", *n)
	fmt.Printf("| total | %.1f s | %.1f s | %.2f × (%s) |\n", tr.Seconds(), ta.Seconds(), ta.Seconds()/tr.Seconds(), verdict)
	fmt.Printf("| median | %.1f ms | %.1f ms | %.2f × |\n", ms(timing.Median(rs)), ms(timing.Median(as)), timing.Median(as).Seconds()/timing.Median(rs).Seconds())
	fmt.Printf("| 95th percentile | %.1f ms | %.1f ms | |\n", ms(p95(rs)), ms(p95(as)))
}

func containerName(api *client.Client, id string) string {
	res, err := api.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	timing.Check(err)
	return strings.TrimPrefix(res.Container.Name, "/")
}

func p95(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)*95/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

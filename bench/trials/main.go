// Command trials-bench measures the turnaround between the trials of an experiment on the
// testbed (tests/testbed/up.sh must be up): a 3-node sbatch job whose manifest has one
// variant (every node) and -trials measured trials of a benchmark that runs `true` in the
// testbed's shell image. The turnaround of trial k is the time from the end of the last
// container of trial k (the latest "die" event of its containers on the three engines) to
// the start of every container of trial k+1 (the latest "start" event of its containers),
// read from the engines' own event streams, which stamp both ends on one clock.
//
// The raw operation it is compared with is a bare `docker run --rm --network host <shell
// image> true` on n1's engine: the time from invoking it to the engine's "start" event of
// its container (start latency); and, for reference, the time from one such container's
// "die" to the next one's "start" when they run back to back (what a shell loop of
// `docker run --rm` has between two runs).
//
// Where the turnaround goes is read from the same events and the nodes' status.json
// (each trial run's startedAt, taken before its container is created, and finishedAt,
// taken after it is removed): the latest of each across the nodes.
//
// Usage:
//
//	make build && go run ./bench/trials [-trials 24] [-reps 20]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/bench/internal/engines"
	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

func main() {
	trials := flag.Int("trials", 24, "measured trials of the experiment (turnarounds: trials-1)")
	reps := flag.Int("reps", 20, "bare docker runs (the median is reported)")
	bin := flag.String("benchctl", "bin/benchctl", "benchctl binary (built with make build)")
	flag.Parse()
	tb, err := testbed.Read(testbed.EnvFile())
	if err != nil {
		log.Fatalf("no testbed: %v (run tests/testbed/up.sh)", err)
	}
	if len(tb.Nodes) < 3 || tb.ShellImage == "" {
		log.Fatalf("the testbed has %d nodes and shell image %q; this needs 3 and one", len(tb.Nodes), tb.ShellImage)
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		log.Fatal("the docker CLI is needed for the raw side")
	}
	benchctl, err := filepath.Abs(*bin)
	timing.Check(err)
	nodes := tb.Nodes[:3]

	// The bare runs: half before the job, half after, so that both sides see the machine's
	// load of the minutes they share.
	hosts := []string{tb.Sockets[nodes[0]], tb.Sockets[nodes[1]], tb.Sockets[nodes[2]]}
	one := rawStarts(docker, hosts[:1], tb.ShellImage, *reps/2)
	all := rawStarts(docker, hosts, tb.ShellImage, *reps/2)

	shared, err := os.MkdirTemp(tb.SharedDir, "trials-bench-")
	timing.Check(err)
	defer os.RemoveAll(shared)
	mf := filepath.Join(shared, "trials.yaml")
	timing.Check(os.WriteFile(mf, []byte(fmt.Sprintf("name: trials\nimage: {ref: %q, pull: never}\ngpu: {vendor: none}\n"+
		"benchmarks:\n  - {name: noop, command: [\"true\"]}\nexperiment: {repeat: %d}\n", tb.ShellImage, *trials)), 0o644))
	script := filepath.Join(shared, "job.sh")
	timing.Check(os.WriteFile(script, []byte("#!/bin/sh\nexec srun --ntasks-per-node=1 \""+benchctl+"\" run --manifest \""+mf+"\" --shared-dir \""+shared+"\"\n"), 0o755))

	// The engines' events of every trial container, from before the job is submitted.
	ctx, cancel := context.WithCancel(context.Background())
	var watch sync.WaitGroup
	evs := make([][]events.Message, len(nodes))
	since := time.Now()
	for i, n := range nodes {
		c := engines.Connect(tb.Sockets[n])
		watch.Add(1)
		go func() {
			defer watch.Done()
			evs[i] = containerEvents(ctx, c, runner.LabelTrial, since)
		}()
	}
	sbatch := exec.Command("sbatch", "--parsable", "--wait", "-N", "3", "--ntasks-per-node=1", "-p", tb.Partition,
		"-o", filepath.Join(shared, "job-%j.out"), script)
	sbatch.Env = tb.Env()
	out, err := sbatch.Output()
	id := strings.TrimSpace(strings.Split(string(out), ";")[0])
	if err != nil || id == "" {
		jobOut, _ := os.ReadFile(filepath.Join(shared, "job-"+id+".out"))
		fmt.Fprintf(os.Stderr, "%s\n", jobOut)
		timing.Check(fmt.Errorf("sbatch: %v (job %q)", err, id))
	}
	time.Sleep(500 * time.Millisecond) // the last events reach the watchers
	cancel()
	watch.Wait()

	one.add(rawStarts(docker, hosts[:1], tb.ShellImage, *reps-*reps/2))
	all.add(rawStarts(docker, hosts, tb.ShellImage, *reps-*reps/2))
	job := jobdir.Layout{Shared: shared}.Job(id, 0)
	stamps := trialStamps(evs, id, *trials)
	statusStamps(stamps, job, nodes)
	report(stamps, one, all, *trials, id)
}

// stamp is one trial's latest moment of each kind across the nodes.
type stamp struct {
	created, started, died, destroyed time.Time // the engines' events
	recStart, recEnd                  time.Time // status.json: the trial run's startedAt and finishedAt
	containers                        int
}

// containerEvents collects the events of containers with label key from since until ctx
// ends (the engine replays those between since and the subscription).
func containerEvents(ctx context.Context, c *client.Client, key string, since time.Time) []events.Message {
	res := c.Events(ctx, client.EventsListOptions{Since: fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
		Filters: make(client.Filters).Add("type", "container").Add("label", key)})
	var got []events.Message
	for {
		select {
		case m := <-res.Messages:
			got = append(got, m)
		case <-res.Err:
			return got
		}
	}
}

// trialStamps takes the latest create, start, die and destroy of each trial's containers of
// job id.
func trialStamps(evs [][]events.Message, id string, trials int) []stamp {
	s := make([]stamp, trials+1)
	for _, node := range evs {
		for _, m := range node {
			if m.Actor.Attributes[runner.LabelJob] != id {
				continue
			}
			seq, err := strconv.Atoi(m.Actor.Attributes[runner.LabelTrial])
			if err != nil || seq < 1 || seq > trials {
				continue
			}
			t := time.Unix(0, m.TimeNano)
			var at *time.Time
			switch m.Action {
			case events.ActionCreate:
				at = &s[seq].created
			case events.ActionStart:
				at, s[seq].containers = &s[seq].started, s[seq].containers+1
			case events.ActionDie:
				at = &s[seq].died
			case events.ActionDestroy:
				at = &s[seq].destroyed
			}
			if at != nil && t.After(*at) {
				*at = t
			}
		}
	}
	return s
}

// statusStamps adds the latest startedAt and finishedAt of each trial run in the nodes'
// status.json and trial log.
func statusStamps(s []stamp, job jobdir.Dir, nodes []string) {
	for rank, n := range nodes {
		st, err := jobdir.ReadNodeStatus(&safefile.Reader{}, job.Node(rank, n)) // with the trial log
		timing.Check(err)
		for _, b := range st.Benchmarks {
			if b.Trial < 1 || b.Trial >= len(s) || b.FinishedAt == nil {
				log.Fatalf("rank %d: trial run %q did not finish (%s)", rank, b.RunName(), b.Outcome)
			}
			if b.Outcome != jobdir.OutcomeSuccess {
				log.Fatalf("rank %d: trial run %q: %s %s", rank, b.RunName(), b.Outcome, b.Error)
			}
			s[b.Trial].recStart = later(s[b.Trial].recStart, b.StartedAt)
			s[b.Trial].recEnd = later(s[b.Trial].recEnd, *b.FinishedAt)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// bare is what bare `docker run --rm` starts cost: per repetition, from invoking the CLI
// (on every engine at once) to the latest create and start events of its containers, and
// from the latest die of one repetition's containers to the latest start of the next's.
type bare struct {
	create, start, gap []time.Duration
}

func (b *bare) add(o bare) {
	b.create, b.start, b.gap = append(b.create, o.create...), append(b.start, o.start...), append(b.gap, o.gap...)
}

// rawStarts runs `docker run --rm --network host image true` reps times on each of hosts at
// once (one CLI process per engine), after one repetition that warms the CLI and engines up.
func rawStarts(docker string, hosts []string, image string, reps int) bare {
	const key = "io.benchctl.bench.trials"
	ctx, cancel := context.WithCancel(context.Background())
	evs := make([][]events.Message, len(hosts))
	var watch sync.WaitGroup
	since := time.Now()
	for i, h := range hosts {
		c := engines.Connect(h)
		watch.Add(1)
		go func() {
			defer watch.Done()
			evs[i] = containerEvents(ctx, c, key, since)
		}()
	}
	invoked := make([]time.Time, reps+1)
	for i := 0; i <= reps; i++ {
		var runs sync.WaitGroup
		invoked[i] = time.Now()
		for _, h := range hosts {
			cmd := exec.Command(docker, "run", "--rm", "--network", "host", "--label", key+"="+strconv.Itoa(i), image, "true")
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+h)
			runs.Add(1)
			go func() {
				defer runs.Done()
				if out, err := cmd.CombinedOutput(); err != nil {
					log.Fatalf("docker run: %v\n%s", err, out)
				}
			}()
		}
		runs.Wait()
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	watch.Wait()
	created, started, died := make([]time.Time, reps+1), make([]time.Time, reps+1), make([]time.Time, reps+1)
	n := make([]int, reps+1)
	for _, node := range evs {
		for _, m := range node {
			i, err := strconv.Atoi(m.Actor.Attributes[key])
			if err != nil || i < 0 || i > reps {
				continue
			}
			t := time.Unix(0, m.TimeNano)
			switch m.Action {
			case events.ActionCreate:
				created[i] = later(created[i], t)
			case events.ActionStart:
				started[i], n[i] = later(started[i], t), n[i]+1
			case events.ActionDie:
				died[i] = later(died[i], t)
			}
		}
	}
	var b bare
	for i := 1; i <= reps; i++ {
		if n[i] != len(hosts) || died[i-1].IsZero() {
			log.Fatalf("bare run %d: %d start events (want %d), or no die event seen", i, n[i], len(hosts))
		}
		b.create = append(b.create, created[i].Sub(invoked[i]))
		b.start = append(b.start, started[i].Sub(invoked[i]))
		b.gap = append(b.gap, started[i].Sub(died[i-1]))
	}
	return b
}

// report prints the turnarounds, where they go, and the ratio to the raw start.
func report(s []stamp, one, all bare, trials int, id string) {
	var turn, remove, record, meet, create, start []time.Duration
	for k := 1; k < trials; k++ {
		a, b := s[k], s[k+1]
		if a.containers != 3 || b.containers != 3 || a.died.IsZero() || b.started.IsZero() {
			log.Fatalf("trial %d/%d: %d/%d containers started (want 3 each): the engines' events are incomplete", k, k+1, a.containers, b.containers)
		}
		turn = append(turn, b.started.Sub(a.died))
		remove = append(remove, a.destroyed.Sub(a.died))
		record = append(record, a.recEnd.Sub(a.destroyed))
		meet = append(meet, b.recStart.Sub(a.recEnd))
		create = append(create, b.created.Sub(b.recStart))
		start = append(start, b.started.Sub(b.created))
	}
	fmt.Printf("job %s: %d trials on 3 nodes, %d turnarounds; %d bare runs each\n\n", id, trials, len(turn), len(one.start))
	fmt.Println("| | median | p90 | min | max |\n|---|---|---|---|---|")
	row := func(name string, d []time.Duration) {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", name, ms(timing.Median(d)), ms(p90(d)), ms(slices.Min(d)), ms(slices.Max(d)))
	}
	row("turnaround: last die of trial k → last start of trial k+1", turn)
	row("  last die → last destroy (wait returns, log drained, container removed)", remove)
	row("  last destroy → last finishedAt of trial k (recorded)", record)
	row("  last finishedAt of k → last startedAt of k+1 (status write, the meet)", meet)
	row("  last startedAt → last create of k+1 (status write, stale-name remove, create)", create)
	row("  last create → last start of k+1 (attach, start)", start)
	row("bare `docker run --rm … true` on n1: invoked → create event", one.create)
	row("bare `docker run --rm … true` on n1: invoked → start event", one.start)
	row("bare on n1, back to back: die → next start", one.gap)
	row("bare on the 3 engines at once: invoked → last create", all.create)
	row("bare on the 3 engines at once: invoked → last start", all.start)
	row("bare on the 3 engines at once, back to back: last die → last next start", all.gap)
	fmt.Printf("\nturnaround ÷ bare start on n1: %.2f × (target ≤ 1.5 ×); ÷ bare start on the 3 engines at once: %.2f ×\n",
		timing.Median(turn).Seconds()/timing.Median(one.start).Seconds(), timing.Median(turn).Seconds()/timing.Median(all.start).Seconds())
}

// p90 is the 90th percentile (nearest rank).
func p90(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*9 + 9) / 10
	return s[min(len(s), max(i, 1))-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

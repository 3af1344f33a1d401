// Command run-bench compares `benchctl run` of a one-node job with a plain `docker run` of
// the same warm image and command on the same engine (the testbed's n1):
//
//	make build examples && go run ./bench/run [-reps 40] [-trials 20]
//
// Both sides start a container, wait for it and remove it; benchctl also resolves the
// manifest and the image's key, checks the engine has the image, writes status.json,
// job.json and node.json, and streams the log. Two figures, each against the target of
// 1.1 × docker run:
//
//   - a warm one-node run, -reps times each side, interleaved (the medians' ratio), with
//     a trace of both from the process's start to its exit, side by side, read from the
//     engine's own events (created, started, died, destroyed: one clock for both), and
//     where benchctl's time went (its BENCHCTL_TIMELINE marks);
//   - each trial of a one-node experiment of -trials trials (one benchctl run) against as
//     many back-to-back `docker run`s: the time from one container's start to the next
//     one's (the engine's events), median over the trials.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/bench/internal/engines"
	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/tests/testbed"
)

// target is the bound: benchctl at most 1.1 × docker run.
const target = 1.1

func main() {
	reps := flag.Int("reps", 40, "repetitions of the one-node run, each side (the median is reported)")
	trials := flag.Int("trials", 20, "trials of the experiment, and back-to-back docker runs (0: none)")
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
	if _, err := os.Stat("models/dummy/bin/dummy"); err != nil {
		log.Fatalf("the dummy example is not built (run make examples, in the checkout's root): %v", err)
	}
	shared, err := os.MkdirTemp(tb.SharedDir, "run-bench-")
	timing.Check(err)
	defer os.RemoveAll(shared)
	b := bench{docker: docker, bin: *bin, shared: shared, env: append(os.Environ(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]]),
		eng: engines.Connect(tb.Sockets[tb.Nodes[0]]), timeline: filepath.Join(shared, "timeline.jsonl")}
	defer b.eng.Close()
	manifest, err := filepath.Abs("models/dummy/benchmark.yaml")
	timing.Check(err)

	// Warm up: build and publish the image, so both sides run a warm container. The
	// warm-up's node ran the image by its id: the engine may hold the image under another
	// tag, or none, so the raw side runs the same id, from the node's status.json.
	b.benchctl("warm", manifest, false)
	b.image, err = imageOfRun(shared, "warm")
	if err != nil {
		log.Fatalf("the warm-up's image: %v", err)
	}
	b.raw("warm")

	since := time.Now()
	var raw, ours []span
	for i := range *reps {
		raw = append(raw, b.raw(fmt.Sprintf("raw-%d", i)))
		ours = append(ours, b.benchctl(fmt.Sprintf("ours-%d", i), manifest, true))
	}
	evs := b.events(since)
	mr, mo := median(raw, func(s span) time.Duration { return s.wall }), median(ours, func(s span) time.Duration { return s.wall })
	fmt.Printf("| warm one-node run, median of %d | docker run | benchctl run | ratio | target |\n|---|---|---|---|---|\n", *reps)
	fmt.Printf("| dummy (3 rows) | %.1f ms | %.1f ms | %.2f × | ≤ %.1f ×: %s |\n", timing.MS(mr), timing.MS(mo), ratio(mo, mr), target, verdict(ratio(mo, mr)))
	trace(raw, ours, evs)
	timing.Breakdown(os.Stdout, b.timeline, mo)
	if *trials > 0 {
		b.experiment(*trials)
	}
}

// bench is what both sides run with.
type bench struct {
	docker, bin, shared, image, timeline string
	env                                  []string
	eng                                  *client.Client
}

// span is one command of a side: its container's name, and when it started and ended.
type span struct {
	name       string
	start, end time.Time
	wall       time.Duration
}

// raw is `docker run --rm` of the warm image, its container named bench-<tag>.
func (b bench) raw(tag string) span {
	name := "bench-" + tag + "-" + fmt.Sprint(time.Now().UnixNano())
	c := exec.Command(b.docker, "run", "--rm", "--name", name, "--network", "host", "--entrypoint", "/dummy", b.image, "--rows", "3")
	c.Env = b.env
	return timed(c, name)
}

// benchctl is `benchctl run` of manifest as job bench-<tag> (marks in b.timeline when
// marked).
func (b bench) benchctl(tag, manifest string, marked bool) span {
	job := "bench-" + tag
	c := exec.Command(b.bin, "run", "-m", manifest, "--shared-dir", b.shared, "--log-level", "warn")
	c.Env = append(b.env, "BENCHCTL_JOB_ID="+job)
	if marked {
		c.Env = append(c.Env, "BENCHCTL_TIMELINE="+b.timeline)
	}
	return timed(c, "benchctl-"+job+"-0-r0-dummy")
}

// timed runs c, failing the benchmark when it fails.
func timed(c *exec.Cmd, name string) span {
	s := span{name: name, start: time.Now()}
	out, err := c.CombinedOutput()
	s.end = time.Now()
	s.wall = s.end.Sub(s.start)
	if err != nil {
		log.Fatalf("%s: %v\n%s", strings.Join(c.Args, " "), err, out)
	}
	return s
}

// events are the engine's container events since then, by container name.
func (b bench) events(since time.Time) map[string][]events.Message {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res := b.eng.Events(ctx, client.EventsListOptions{Since: fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
		Until: fmt.Sprintf("%d", time.Now().Add(time.Second).Unix()), Filters: make(client.Filters).Add("type", "container")})
	out := map[string][]events.Message{}
	for {
		select {
		case m := <-res.Messages:
			n := m.Actor.Attributes["name"]
			out[n] = append(out[n], m)
		case <-res.Err:
			return out
		}
	}
}

// at is when the container's event action happened (zero: not seen).
func at(evs []events.Message, action events.Action) time.Time {
	for _, m := range evs {
		if m.Action == action {
			return time.Unix(0, m.TimeNano)
		}
	}
	return time.Time{}
}

// trace prints both sides' runs from start to exit, side by side: each phase the median over
// the repetitions, from the engine's events.
func trace(raw, ours []span, evs map[string][]events.Message) {
	phases := []struct {
		name     string
		from, to func(span, []events.Message) time.Time
	}{
		{"process start → container created", startOf, ev(events.ActionCreate)},
		{"created → started", ev(events.ActionCreate), ev(events.ActionStart)},
		{"started → exited (the benchmark)", ev(events.ActionStart), ev(events.ActionDie)},
		{"exited → removed", ev(events.ActionDie), ev(events.ActionDestroy)},
		{"removed → process exit", ev(events.ActionDestroy), endOf},
	}
	fmt.Printf("\n| where the time goes (median; engine events) | docker run | benchctl run | more |\n|---|---|---|---|\n")
	for _, p := range phases {
		r, o := phaseMedian(raw, evs, p.from, p.to), phaseMedian(ours, evs, p.from, p.to)
		fmt.Printf("| %s | %.1f ms | %.1f ms | %+.1f ms |\n", p.name, timing.MS(r), timing.MS(o), timing.MS(o-r))
	}
}

func startOf(s span, _ []events.Message) time.Time { return s.start }
func endOf(s span, _ []events.Message) time.Time   { return s.end }
func ev(a events.Action) func(span, []events.Message) time.Time {
	return func(_ span, e []events.Message) time.Time { return at(e, a) }
}

// phaseMedian is the median of to-from over the spans whose both ends were seen.
func phaseMedian(spans []span, evs map[string][]events.Message, from, to func(span, []events.Message) time.Time) time.Duration {
	var d []time.Duration
	for _, s := range spans {
		f, t := from(s, evs[s.name]), to(s, evs[s.name])
		if !f.IsZero() && !t.IsZero() {
			d = append(d, t.Sub(f))
		}
	}
	if len(d) == 0 {
		log.Fatalf("no engine events for the containers (%s, ...)", spans[0].name)
	}
	return timing.Median(d)
}

// experiment compares each trial of a one-node experiment of n trials with n back-to-back
// docker runs: the time from a container's start to the next one's.
func (b bench) experiment(n int) {
	dir, err := os.MkdirTemp("", "run-bench-trials-")
	timing.Check(err)
	defer os.RemoveAll(dir)
	// The dummy's build context, with an experiment: the same image (its key is its
	// content's), run n times by one job.
	for _, f := range []string{"Dockerfile", ".dockerignore", "bin/dummy"} {
		data, err := os.ReadFile(filepath.Join("models/dummy", f))
		timing.Check(err)
		timing.Check(os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		timing.Check(os.WriteFile(filepath.Join(dir, f), data, 0o755))
	}
	m, err := os.ReadFile("models/dummy/benchmark.yaml")
	timing.Check(err)
	manifest := filepath.Join(dir, "benchmark.yaml")
	timing.Check(os.WriteFile(manifest, append(m, []byte(fmt.Sprintf("experiment:\n  repeat: %d\n", n))...), 0o644))
	b.benchctl("trials-warm", manifest, false)

	since := time.Now()
	job := "bench-trials"
	var raws []span
	for i := range n {
		raws = append(raws, b.raw(fmt.Sprintf("b2b-%d", i)))
	}
	rawWall := raws[len(raws)-1].end.Sub(raws[0].start)
	ourSpan := b.benchctl("trials", manifest, false)
	evs := b.events(since)
	var rawStarts, ourStarts []time.Time
	for _, s := range raws {
		rawStarts = append(rawStarts, at(evs[s.name], events.ActionStart))
	}
	for seq := 1; seq <= n; seq++ {
		ourStarts = append(ourStarts, at(evs[fmt.Sprintf("benchctl-%s-0-r0-dummy@%d", job, seq)], events.ActionStart))
	}
	if slices.ContainsFunc(ourStarts, time.Time.IsZero) {
		ourStarts = trialStarts(evs, job, n)
	}
	cr, co := cycles(rawStarts), cycles(ourStarts)
	if len(cr) == 0 || len(co) == 0 {
		log.Fatalf("the engine's events did not show the trials' starts (docker runs %d, trials %d)", len(cr), len(co))
	}
	mr, mo := timing.Median(cr), timing.Median(co)
	fmt.Printf("\n| each trial of a 1-node experiment of %d trials (start to next start, median) | %d back-to-back docker runs | benchctl run | ratio | target |\n|---|---|---|---|---|\n", n, n)
	fmt.Printf("| dummy (3 rows) | %.1f ms | %.1f ms | %.2f × | ≤ %.1f ×: %s |\n", timing.MS(mr), timing.MS(mo), ratio(mo, mr), target, verdict(ratio(mo, mr)))
	fmt.Printf("| the whole (first start to last exit; benchctl: its process) | %.0f ms | %.0f ms | %.2f × | |\n", timing.MS(rawWall), timing.MS(ourSpan.wall), ratio(ourSpan.wall, rawWall))
}

// trialStarts finds the trials' containers by their labels, where their names are not the
// ones expected: the start of each, in the order of their trial numbers.
func trialStarts(evs map[string][]events.Message, job string, n int) []time.Time {
	starts := make([]time.Time, n)
	for _, list := range evs {
		for _, m := range list {
			if m.Action != events.ActionStart || m.Actor.Attributes["io.benchctl.job"] != job {
				continue
			}
			var seq int
			if _, err := fmt.Sscan(m.Actor.Attributes["io.benchctl.trial"], &seq); err == nil && seq >= 1 && seq <= n {
				starts[seq-1] = time.Unix(0, m.TimeNano)
			}
		}
	}
	return starts
}

// cycles are the times between consecutive starts (those seen).
func cycles(starts []time.Time) []time.Duration {
	var d []time.Duration
	for i := 1; i < len(starts); i++ {
		if !starts[i].IsZero() && !starts[i-1].IsZero() {
			d = append(d, starts[i].Sub(starts[i-1]))
		}
	}
	return d
}

func median(s []span, f func(span) time.Duration) time.Duration {
	d := make([]time.Duration, len(s))
	for i := range s {
		d[i] = f(s[i])
	}
	return timing.Median(d)
}

func ratio(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

func verdict(r float64) string {
	if r <= target {
		return "met"
	}
	return "NOT met"
}

// imageOfRun is the image id the one node of job bench-<tag> in shared ran.
func imageOfRun(shared, tag string) (string, error) {
	files, err := filepath.Glob(filepath.Join(shared, "jobs", "bench-"+tag+"*", "nodes", "*", "status.json"))
	if err != nil || len(files) != 1 {
		return "", fmt.Errorf("want one node status of job bench-%s in %s, found %d (%v)", tag, shared, len(files), err)
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

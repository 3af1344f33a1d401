package runner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/timeline"

	"github.com/benchctl/benchctl/runner/podman"

	"github.com/benchctl/benchctl/diagnostics"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
)

// execResult is how one container ended.
type execResult struct {
	Outcome  string
	ExitCode int
	Err      error
	DiagDir  string
}

// maxTailLine bounds each line the log tail keeps: diagnostics quote 2,048 bytes of a line,
// and redaction looks 64 KiB past that cut for a secret that straddles it. A longer line
// keeps its first maxTailLine bytes and tailCut; the rest is dropped as it arrives (a
// container printing gigabytes without a newline costs the node nothing).
const maxTailLine = 66 << 10

// tailCut ends a line the tail cut.
const tailCut = " [… line cut]"

// lineTail keeps the last n lines written through it (for diagnostics).
type lineTail struct {
	mu    sync.Mutex
	n     int
	lines []string
	part  []byte // the line being written, at most maxTailLine bytes
	cut   bool   // part was cut: drop the rest of the line
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxTailLine - len(t.part); len(chunk) > room {
			chunk, t.cut = chunk[:room], true
		}
		t.part = append(t.part, chunk...)
		if i < 0 {
			break
		}
		t.lines = append(t.lines, t.line())
		t.part, t.cut = t.part[:0], false
		if cap(t.part) > 4<<10 {
			t.part = nil // do not keep a long line's buffer
		}
		if len(t.lines) > 2*t.n {
			t.lines = append([]string(nil), t.lines[len(t.lines)-t.n:]...)
		}
		p = p[i+1:]
	}
	return n, nil
}

// line is the line being written as the tail keeps it.
func (t *lineTail) line() string {
	if t.cut {
		return string(t.part) + tailCut
	}
	return string(t.part)
}

func (t *lineTail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.lines
	if len(t.part) > 0 {
		out = append(append([]string(nil), out...), t.line())
	}
	if len(out) > t.n {
		out = out[len(out)-t.n:]
	}
	return out
}

// prefixWriter prefixes every line (for the rank-tagged stream on stderr).
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]byte, 0, len(b)+len(p.prefix)*2)
	for _, c := range b {
		if !p.mid {
			out = append(out, p.prefix...)
			p.mid = true
		}
		out = append(out, c)
		if c == '\n' {
			p.mid = false
		}
	}
	_, err := p.w.Write(out)
	return len(b), err
}

// budget bounds each step of stopping and removing a container, so that an engine that
// does not answer cannot hold the node: a timeout gives the benchmark time to write what it
// has; a cancel (scancel) less, so that the whole SIGTERM path fits in Slurm's KillWait
// (30 s by default, see cancelTotal); an abort does not wait for it.
type budget struct {
	stopGrace, cancelGrace, abortGrace int             // seconds between SIGTERM and SIGKILL
	stopSlack                          time.Duration   // the Engine's stop call past the grace
	waitSlack                          time.Duration   // the container's exit, then its log, after the stop
	diag                               time.Duration   // diagnostics before the stop
	remove                             time.Duration   // the final forced remove
	started                            func(id string) // told the process's id once it runs (nil: nobody)
}

// defaultBudget is what a run uses: the SIGTERM path of a container takes at most cancelTotal (25 s);
// writing status.json and closing the job channel add about a second.
func defaultBudget() budget {
	return budget{stopGrace: 10, cancelGrace: 8, abortGrace: 2, stopSlack: 3 * time.Second,
		waitSlack: 2 * time.Second, diag: 5 * time.Second, remove: 5 * time.Second}
}

// cancelTotal is the most the SIGTERM path of one container takes: diagnostics, the stop
// with its grace, waiting for the exit and the log, the remove.
func (b budget) cancelTotal() time.Duration {
	return b.diag + time.Duration(b.cancelGrace)*time.Second + b.stopSlack + 2*b.waitSlack + b.remove
}

// runContainer runs one benchmark container to its end: it streams the log to logPath and
// to stream, stops the container at timeout or when ctx is cancelled (diagnostics first),
// and removes it on every path. A ctx cancelled with a cause other than context.Canceled
// (the job channel's *AbortError or *LostError) ends the benchmark as aborted, with that
// cause as its reason.
//
// reap, when not nil, is handed the removal of the ended container instead of it being done
// before runContainer returns: a job walking trials removes a trial's container while the
// ranks meet for the next one (and waits for every removal before it ends).
func runContainer(ctx context.Context, rt workload.Runtime, spec Spec, timeout time.Duration, files nodeFiles, stream io.Writer, bud budget, reap func(remove func())) execResult {
	proc := spec.Process()
	if err := podman.AdaptToEngine(spec.Engine, &proc, podman.ThisHost(spec.Engine)); err != nil {
		return execResult{Outcome: "failure", ExitCode: -1, Err: fmt.Errorf("container %s: %w", spec.Name, err)}
	}
	bg := context.WithoutCancel(ctx)
	// A container of the same name left from a crashed earlier run of this attempt is
	// removed by the runtime, and the create tried once more.
	timeline.Mark("create")
	id, err := rt.Create(ctx, proc)
	timeline.Mark("created")
	if err != nil {
		if res, stopped := interrupted(ctx); stopped {
			return res
		}
		return execResult{Outcome: "failure", ExitCode: -1, Err: fmt.Errorf("creating container %s: %w", spec.Name, podman.StartHint(spec.Engine, err))}
	}
	defer func() {
		remove := func() {
			rctx, cancel := context.WithTimeout(bg, bud.remove)
			defer cancel()
			_ = rt.Remove(rctx, id)
			timeline.Mark("removed")
		}
		if reap != nil {
			reap(remove)
			return
		}
		remove()
	}()
	logFile, err := files.createLog()
	if err != nil {
		return execResult{Outcome: "failure", ExitCode: -1, Err: err}
	}
	defer logFile.Close()
	tail := &lineTail{n: diagnostics.MaxLogLines}
	out := io.MultiWriter(logFile, tail, stream)

	wait := rt.Wait(bg, id)
	timeline.Mark("start")
	if err := rt.Start(ctx, id); err != nil {
		if res, stopped := interrupted(ctx); stopped {
			return res
		}
		res := execResult{Outcome: "failure", ExitCode: -1, Err: fmt.Errorf("starting container %s: %w", spec.Name, podman.StartHint(spec.Engine, err))}
		dctx, cancel := context.WithTimeout(bg, bud.diag)
		res.DiagDir = capture(dctx, rt, id, "the container did not start: "+err.Error(), tail, spec, files)
		cancel()
		return res
	}
	timeline.Mark("started")
	if bud.started != nil {
		bud.started(id)
	}
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		bw := bufio.NewWriter(out)
		err := rt.Logs(bg, id, flushWriter{bw})
		bw.Flush()
		if err != nil {
			fmt.Fprintf(out, "benchctl: cannot read the container's log: %v\n", err)
		}
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stop := func(outcome, reason string, grace int) execResult {
		res := execResult{Outcome: outcome, ExitCode: -1, Err: errors.New(reason)}
		// A second SIGTERM/SIGINT (Forced) cuts the diagnostics and the stop grace short:
		// the deferred remove kills the container at once.
		fctx, fcancel := context.WithCancel(bg)
		defer fcancel()
		go func() {
			select {
			case <-Forced(ctx):
				fcancel()
			case <-fctx.Done():
			}
		}()
		dctx, cancel := context.WithTimeout(fctx, bud.diag)
		res.DiagDir = capture(dctx, rt, id, reason, tail, spec, files) // while it still runs
		cancel()
		sctx, cancel := context.WithTimeout(fctx, time.Duration(grace)*time.Second+bud.stopSlack)
		_ = rt.Stop(sctx, id, time.Duration(grace)*time.Second)
		cancel()
		select {
		case r := <-wait:
			if r.Err == nil {
				res.ExitCode = r.Code
			}
		case <-time.After(bud.waitSlack):
		case <-fctx.Done():
		}
		select {
		case <-logsDone:
		case <-time.After(bud.waitSlack):
		case <-fctx.Done():
		}
		return res
	}
	select {
	case r := <-wait:
		timeline.Mark("exited")
		if r.Err != nil {
			return stop("failure", fmt.Sprintf("waiting for the container failed: %v", r.Err), bud.stopGrace)
		}
		select { // the end of the log, bounded
		case <-logsDone:
		case <-time.After(2 * bud.waitSlack):
		}
		timeline.Mark("log read")
		if r.Code == 0 {
			return execResult{Outcome: "success"}
		}
		reason := fmt.Sprintf("exited with code %d", r.Code)
		res := execResult{Outcome: "failure", ExitCode: r.Code, Err: errors.New(reason)}
		dctx, cancel := context.WithTimeout(bg, bud.diag)
		res.DiagDir = capture(dctx, rt, id, reason, tail, spec, files)
		cancel()
		return res
	case <-timer.C:
		return stop("timeout", fmt.Sprintf("timed out after %s (benchmarks[].timeout)", timeout), bud.stopGrace)
	case <-ctx.Done():
		if verdict := context.Cause(ctx); verdict != nil && !errors.Is(verdict, context.Canceled) && !errors.Is(verdict, context.DeadlineExceeded) {
			// The job was aborted or rank 0 was lost: the peers must stop at once.
			return stop(OutcomeAborted, verdict.Error(), bud.abortGrace)
		}
		return stop("cancelled", "cancelled (SIGTERM/SIGINT, e.g. scancel)", bud.cancelGrace)
	}
}

// interrupted tells an Engine error caused by the run being stopped (a cancel, or the job
// channel's abort) from a failure of the benchmark.
func interrupted(ctx context.Context) (execResult, bool) {
	if ctx.Err() == nil {
		return execResult{}, false
	}
	if verdict := context.Cause(ctx); verdict != nil && !errors.Is(verdict, context.Canceled) && !errors.Is(verdict, context.DeadlineExceeded) {
		return execResult{Outcome: OutcomeAborted, ExitCode: -1, Err: verdict}, true
	}
	return execResult{Outcome: OutcomeCancelled, ExitCode: -1, Err: errors.New("cancelled (SIGTERM/SIGINT, e.g. scancel) before the container started")}, true
}

// forceKey carries the channel closed at a second SIGTERM/SIGINT.
type forceKey struct{}

// WithForce returns ctx carrying force: when force is closed (e.g. at a second SIGTERM)
// while a cancelled run cleans up, it stops waiting: no diagnostics, no stop grace, the
// containers are removed at once.
func WithForce(ctx context.Context, force <-chan struct{}) context.Context {
	return context.WithValue(ctx, forceKey{}, force)
}

// Forced returns the force channel of ctx (nil, which never fires, if none).
func Forced(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(forceKey{}).(<-chan struct{})
	return ch
}

// flushWriter flushes after every write so the log file and stream stay current.
type flushWriter struct{ w *bufio.Writer }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.w.Flush()
	}
	return n, err
}

// redactorOf hides the container's secret and credential-like env values, and any
// credential-like NAME=value or --name value, in text benchctl quotes from it.
func redactorOf(spec Spec) *manifest.TextRedactor {
	return manifest.NewTextRedactor(manifest.SecretValues(spec.Env)...)
}

// statusError is a benchmark's error as status.json and the node's log show it: an engine's
// error can quote the container's command, so the job's secrets and anything
// credential-like are hidden ("" for no error).
func statusError(spec Spec, err error) string {
	if err == nil {
		return ""
	}
	return redactorOf(spec).Redact(err.Error())
}

// capture writes diagnostics and returns their folder ("" if nothing could be written).
func capture(ctx context.Context, rt workload.Runtime, id, reason string, tail *lineTail, spec Spec, files nodeFiles) string {
	rep := diagnostics.Capture(ctx, rt, id, reason, tail.get(), spec.GPU.Describe(), redactorOf(spec))
	if err := files.writeDiag(rep); err != nil {
		return ""
	}
	return files.node.Diagnostics(files.bench)
}

// nodeFiles is where a benchmark's container log and diagnostics go: its node folder,
// held open, so that every file is created through the folder's descriptor (never through
// a link planted in the shared job folder).
type nodeFiles struct {
	node  *jobdir.NodeFolder
	bench string
}

// createLog creates (truncates) the benchmark's log: a regular file, not a link or FIFO.
func (f nodeFiles) createLog() (*os.File, error) { return f.node.CreateLog(f.bench) }

// writeDiag writes a diagnostics report into diagnostics/<bench>/.
func (f nodeFiles) writeDiag(rep diagnostics.Report) error {
	d, err := f.node.MkdirAll(jobdir.DiagRel(f.bench), 0o700)
	if err != nil {
		return err
	}
	defer d.Close()
	return rep.WriteAt(d)
}

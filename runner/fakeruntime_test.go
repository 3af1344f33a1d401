package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchctl/benchctl/workload"
)

// fakeRuntime is a runtime whose one process does what the test says: runner.Run is tested
// through it for the faults a real runtime has (a start that fails, a wait that never
// ends, a stop that does not stop, a log stream that is lost), which the engines of the
// testbed cannot be made to have on cue.
type fakeRuntime struct {
	startErr    error // Start fails with it
	waitHangs   bool  // Wait never says the process ended
	stopIgnored bool  // Stop answers, and the process goes on
	logErr      error // Logs loses the stream at once
	exit        int   // else the process prints its output and exits with this code

	mu     sync.Mutex
	calls  []string
	specs  []workload.Spec
	exited chan workload.Exit
}

var _ workload.Runtime = (*fakeRuntime)(nil)

func (f *fakeRuntime) call(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeRuntime) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeRuntime) Create(_ context.Context, s workload.Spec) (string, error) {
	f.call("create")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specs = append(f.specs, s)
	f.exited = make(chan workload.Exit, 1)
	return "p1", nil
}

func (f *fakeRuntime) Wait(ctx context.Context, _ string) <-chan workload.Exit {
	f.call("wait")
	out := make(chan workload.Exit, 1)
	f.mu.Lock()
	exited := f.exited
	f.mu.Unlock()
	go func() {
		select {
		case e := <-exited:
			out <- e
		case <-ctx.Done():
			out <- workload.Exit{Code: -1, Err: ctx.Err()}
		}
	}()
	return out
}

func (f *fakeRuntime) Start(context.Context, string) error {
	f.call("start")
	if f.startErr != nil {
		return f.startErr
	}
	if !f.waitHangs {
		f.exited <- workload.Exit{Code: f.exit}
	}
	return nil
}

func (f *fakeRuntime) Logs(ctx context.Context, _ string, w io.Writer) error {
	f.call("logs")
	if f.logErr != nil {
		return f.logErr
	}
	fmt.Fprintln(w, "benchmark output")
	return nil
}

func (f *fakeRuntime) Stop(context.Context, string, time.Duration) error {
	f.call("stop")
	if !f.stopIgnored {
		f.exited <- workload.Exit{Code: 143}
	}
	return nil
}

func (f *fakeRuntime) Remove(context.Context, string) error { f.call("remove"); return nil }

func (f *fakeRuntime) List(context.Context, map[string]string) ([]workload.Process, error) {
	f.call("list")
	return nil, nil
}

func (f *fakeRuntime) Inspect(context.Context, string) (workload.State, error) {
	f.call("inspect")
	return workload.State{Running: f.waitHangs || f.stopIgnored}, nil
}

func (f *fakeRuntime) Top(context.Context, string) (workload.Top, error) {
	f.call("top")
	return workload.Top{}, errors.New("no processes to list")
}

func (f *fakeRuntime) Describe(context.Context) (string, error) { return "fake runtime", nil }

// Exec: a run execs nothing beside its benchmark (yet); a call is recorded and fails.
func (f *fakeRuntime) Exec(context.Context, string, workload.Command) (int, error) {
	f.call("exec")
	return -1, errors.New("the fake runtime runs nothing beside a process")
}

// runOnRuntime runs one benchmark, with body's timeout, on rt.
func runOnRuntime(t *testing.T, rt *fakeRuntime, timeout string) localRun {
	t.Helper()
	return runLocalOf(t, &runEngine{rt: rt}, "benchmarks:\n- {name: b, command: [/b, x], timeout: "+timeout+"}\n", nil)
}

// The fake runtime runs a benchmark to success, as the engine's containers do: the tests
// below fail for the fault they inject.
func TestRunThroughAFakeRuntime(t *testing.T) {
	rt := &fakeRuntime{}
	r := runOnRuntime(t, rt, "1h")
	if r.err != nil || benchStatus(t, r.st).Outcome != OutcomeSuccess {
		t.Fatalf("Run: %v, %+v", r.err, r.st)
	}
	if got := strings.Join(rt.called(), " "); !strings.HasPrefix(got, "create wait start") || !strings.Contains(got, "logs") || !strings.HasSuffix(got, "remove") {
		t.Errorf("calls: %s", got)
	}
	if s := rt.specs[0]; !slices.Equal(s.Command, []string{"/b", "x"}) || s.Image != fakeID && s.Image != fakeRef || s.Labels[LabelJob] != "j1" {
		t.Errorf("spec: %+v", s)
	}
}

// A start that fails fails the benchmark saying why, with diagnostics, and the process is
// removed.
func TestRunWhenTheRuntimeCannotStart(t *testing.T) {
	rt := &fakeRuntime{startErr: errors.New("exec format error")}
	r := runOnRuntime(t, rt, "1h")
	wantRunError(t, r.err, r.st)
	b := benchStatus(t, r.st)
	if b.Outcome != OutcomeFailure || !strings.Contains(b.Error, "starting container") || !strings.Contains(b.Error, "exec format error") {
		t.Errorf("benchmark: %+v", b)
	}
	if c := rt.called(); !slices.Contains(c, "inspect") || c[len(c)-1] != "remove" || slices.Contains(c, "logs") {
		t.Errorf("calls: %v; want diagnostics, no log, the remove last", c)
	}
}

// A wait that never ends is cut by the benchmark's timeout: stopped, diagnosed, removed;
// the node ends and says so.
func TestRunWhenTheWaitHangs(t *testing.T) {
	rt := &fakeRuntime{waitHangs: true, stopIgnored: true}
	r := runOnRuntime(t, rt, "1s")
	wantRunError(t, r.err, r.st)
	if b := benchStatus(t, r.st); b.Outcome != OutcomeTimeout || !strings.Contains(b.Error, "timed out after 1s") {
		t.Errorf("benchmark: %+v", b)
	}
	c := rt.called()
	if !slices.Contains(c, "stop") || !slices.Contains(c, "inspect") || c[len(c)-1] != "remove" {
		t.Errorf("calls: %v; want diagnostics, a stop, the remove last", c)
	}
	if r.st.Outcome != OutcomeFailure {
		t.Errorf("node: %s", r.st.Outcome)
	}
}

// A stop that does not stop (the runtime answers, the process goes on) does not hold the
// node: after the stop's slack the process is removed by force, and the exit code is not
// made up.
func TestRunWhenTheStopDoesNotStop(t *testing.T) {
	rt := &fakeRuntime{waitHangs: true, stopIgnored: true}
	r := runOnRuntime(t, rt, "1s")
	b := benchStatus(t, r.st)
	if b.Outcome != OutcomeTimeout || b.ExitCode != -1 {
		t.Errorf("benchmark: %+v; want a timeout with no exit code", b)
	}
	c := rt.called()
	if i := slices.Index(c, "stop"); i < 0 || !slices.Contains(c[i:], "remove") {
		t.Errorf("calls: %v; want the remove after the stop", c)
	}
	// And a stop that works: the exit code it caused is the benchmark's.
	rt = &fakeRuntime{waitHangs: true}
	r = runOnRuntime(t, rt, "1s")
	if b := benchStatus(t, r.st); b.Outcome != OutcomeTimeout || b.ExitCode != 143 {
		t.Errorf("benchmark after a stop that stopped: %+v", b)
	}
}

// A log stream that is lost does not fail a benchmark that succeeded: its log says the
// stream was lost, and the outcome is the process's.
func TestRunWhenTheLogStreamIsLost(t *testing.T) {
	rt := &fakeRuntime{logErr: errors.New("connection reset by peer")}
	r := runOnRuntime(t, rt, "1h")
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	b := benchStatus(t, r.st)
	if b.Outcome != OutcomeSuccess {
		t.Errorf("benchmark: %+v", b)
	}
	log, err := os.ReadFile(r.res.NodeDir + "/" + b.Log)
	if err != nil || !strings.Contains(string(log), "cannot read the container's log: connection reset by peer") {
		t.Errorf("log %q, %v", log, err)
	}
}

func (f *fakeRuntime) Facts(context.Context) (workload.Facts, error) {
	return workload.Facts{Kind: "fake", Name: "fake runtime", Version: "1"}, nil
}

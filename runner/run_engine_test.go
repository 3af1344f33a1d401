package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	imagetypes "github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
)

// fakeRef is the image.ref of runManifest, and fakeID the id the fake engine has it as.
const (
	fakeRef = "registry.example/bench:1"
	fakeID  = "sha256:00000000000000000000000000000000000000000000000000000000000000f1"
)

// errGone is what the Docker client says when its engine is not there any more.
//
//lint:ignore ST1005 the Docker client's own words
var errGone = errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")

// runEngine is a node's Docker Engine for Run's unit tests. It has fakeRef already (so the
// image phase pulls and builds nothing), and its one container does what the test says. A
// call it does not implement panics on the nil embedded Engine: the test did not expect it.
type runEngine struct {
	Engine
	createErr error                                   // ContainerCreate fails with it
	conflicts int                                     // the first creates fail as a name in use (a container left behind)
	waitErr   error                                   // the container's wait ends with it, not with an exit
	exit      int64                                   // else the container exits with this code
	onStart   func()                                  // called once the container has started
	version   client.ServerVersionResult              // what it says it is
	askKind   string                                  // the run's Options.EngineKind
	libpod    func(context.Context) (net.Conn, error) // Podman's own API (nil: it does not answer)
	imageUser string                                  // the image's USER
	rt        workload.Runtime                        // the benchmarks run here, not in the engine's containers (nil: they do)

	mu     sync.Mutex
	gone   bool // the engine vanished: every call fails from now on
	calls  []string
	envs   [][]string              // each created container's environment
	hosts  []*container.HostConfig // each created container's host settings
	result chan container.WaitResponse
	errc   chan error
}

var _ Engine = (*runEngine)(nil)

// call records c and says whether the engine is gone.
func (e *runEngine) call(c string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, c)
	if e.gone {
		return errGone
	}
	return nil
}

func (e *runEngine) vanish() { e.mu.Lock(); e.gone = true; e.mu.Unlock() }

func (e *runEngine) called() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.calls, " ")
}

func (e *runEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if err := e.call("inspect-image"); err != nil {
		return client.ImageInspectResult{}, err
	}
	if ref != fakeRef && ref != fakeID {
		return client.ImageInspectResult{}, errors.New("fake engine: no image " + ref)
	}
	res := imagetypes.InspectResponse{ID: fakeID}
	if e.imageUser != "" {
		b, _ := json.Marshal(map[string]any{"Config": map[string]string{"User": e.imageUser}})
		if err := json.Unmarshal(b, &res); err != nil {
			return client.ImageInspectResult{}, err
		}
	}
	return client.ImageInspectResult{InspectResponse: res}, nil
}

func (e *runEngine) ContainerCreate(_ context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	if err := e.call("create"); err != nil {
		return client.ContainerCreateResult{}, err
	}
	if o.Config != nil {
		e.mu.Lock()
		e.envs = append(e.envs, o.Config.Env)
		e.hosts = append(e.hosts, o.HostConfig)
		e.mu.Unlock()
	}
	if e.createErr != nil {
		return client.ContainerCreateResult{}, e.createErr
	}
	e.mu.Lock()
	conflict := e.conflicts > 0
	if conflict {
		e.conflicts--
	}
	e.mu.Unlock()
	if conflict {
		return client.ContainerCreateResult{}, fmt.Errorf("Conflict. The container name %q is already in use: %w", o.Name, cerrdefs.ErrConflict)
	}
	return client.ContainerCreateResult{ID: "c1"}, nil
}

func (e *runEngine) ContainerWait(context.Context, string, client.ContainerWaitOptions) client.ContainerWaitResult {
	_ = e.call("wait")
	e.mu.Lock()
	defer e.mu.Unlock()
	e.result, e.errc = make(chan container.WaitResponse, 1), make(chan error, 1)
	return client.ContainerWaitResult{Result: e.result, Error: e.errc}
}

// ContainerStart starts the container; it ends at once, as the test says.
func (e *runEngine) ContainerStart(context.Context, string, client.ContainerStartOptions) (client.ContainerStartResult, error) {
	if err := e.call("start"); err != nil {
		return client.ContainerStartResult{}, err
	}
	if e.onStart != nil {
		e.onStart()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.gone: // the client's wait ends with the connection
		e.errc <- errGone
	case e.waitErr != nil:
		e.errc <- e.waitErr
	default:
		e.result <- container.WaitResponse{StatusCode: e.exit}
	}
	return client.ContainerStartResult{}, nil
}

func (e *runEngine) ContainerLogs(context.Context, string, client.ContainerLogsOptions) (client.ContainerLogsResult, error) {
	if err := e.call("logs"); err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader("")), nil
}

func (e *runEngine) ContainerStop(context.Context, string, client.ContainerStopOptions) (client.ContainerStopResult, error) {
	return client.ContainerStopResult{}, e.call("stop")
}

func (e *runEngine) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	return client.ContainerRemoveResult{}, e.call("remove:" + id)
}

// ContainerList finds no container: a requeued attempt looks for the previous one's.
func (e *runEngine) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{}, e.call("list")
}

func (e *runEngine) ContainerInspect(context.Context, string, client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{}, e.call("inspect")
}

func (e *runEngine) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return e.version, e.call("version")
}

func (e *runEngine) Dialer() func(context.Context) (net.Conn, error) { return dialerOf(e.libpod) }

func (e *runEngine) Close() error { _ = e.call("close"); return nil }

// localRun is how a node's run ended: what Run returned, status.json as the node left it
// (nil: unreadable), and the node's log.
type localRun struct {
	res *Result
	err error
	st  *jobdir.Status // status.json with the trial log's records (ReadNodeStatus)
	raw *jobdir.Status // status.json alone
	log string
}

// runLocal runs a one-node local job (rank 0 of 1) of one benchmark on eng, in a fresh
// shared folder.
func runLocal(t *testing.T, eng *runEngine, onStart func(nd jobdir.NodeDir)) localRun {
	t.Helper()
	return runLocalOf(t, eng, "benchmarks:\n- {name: b, command: [/b]}\n", onStart)
}

// runLocalOf is runLocal of a manifest whose benchmarks (and more) are body.
func runLocalOf(t *testing.T, eng *runEngine, body string, onStart func(nd jobdir.NodeDir)) localRun {
	t.Helper()
	return runNodeOf(t, eng, body, map[string]string{"NODE_RANK": "0", "NNODES": "1", "BENCHCTL_JOB_ID": "j1"}, t.TempDir(), onStart)
}

// runNodeOf runs a one-node job of body on eng with the node context env gives, in the
// shared folder dir/shared.
func runNodeOf(t *testing.T, eng *runEngine, body string, env map[string]string, dir string, onStart func(nd jobdir.NodeDir)) localRun {
	t.Helper()
	return runNodeOn(t, eng, eng, body, env, dir, onStart)
}

// runFakeWith is runLocal on api, an Engine around the fake eng (a wrapper that adds calls).
func runFakeWith(t *testing.T, api Engine, eng *runEngine) localRun {
	t.Helper()
	return runNodeOn(t, api, eng, "benchmarks:\n- {name: b, command: [/b]}\n", map[string]string{"NODE_RANK": "0", "NNODES": "1", "BENCHCTL_JOB_ID": "j1"}, t.TempDir(), nil)
}

// runNodeOn is runNodeOf with the Engine Run is given (api) apart from the fake it wraps.
func runNodeOn(t *testing.T, api Engine, eng *runEngine, body string, env map[string]string, dir string, onStart func(nd jobdir.NodeDir)) localRun {
	t.Helper()
	body = "name: t\nimage: {ref: '" + fakeRef + "'}\ngpu: {vendor: none}\n" + body
	m, _, err := manifest.Parse("m.yaml", filepath.Join(dir, "m.yaml"), []byte(body), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lookup := testutil.LookupOf(env)
	shared := filepath.Join(dir, "shared")
	node, err := DetectNode(lookup)
	if err != nil {
		t.Fatal(err)
	}
	nd := jobdir.Layout{Shared: shared}.Job(node.JobID, node.Attempt).Node(node.Rank, node.Host)
	if onStart != nil {
		eng.onStart = func() { onStart(nd) }
	}
	done := make(chan localRun, 1)
	log := &testutil.SyncBuffer{}
	var rt func(Engine) workload.Runtime
	if eng.rt != nil {
		rt = func(Engine) workload.Runtime { return eng.rt }
	}
	go func() {
		res, err := Run(context.Background(), Options{Node: node, Manifest: m, SharedDir: shared, Lookup: lookup, Version: "test", EngineKind: eng.askKind,
			Engine: func() (Engine, error) { return api, nil }, Runtime: rt, Log: slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), log), nil))})
		done <- localRun{res: res, err: err}
	}()
	var r localRun
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute): // it only has to end
		t.Fatal("Run did not end")
	}
	if r.res == nil || r.res.NodeDir != nd.Path {
		t.Fatalf("Run: %+v, %v; want the node folder %s", r.res, r.err, nd.Path)
	}
	r.st, _ = jobdir.ReadNodeStatus(&safefile.Reader{}, nd) // status.json with its trial log
	if raw, err := jobdir.ReadStatus(nd.Status()); err == nil {
		r.raw = raw
	}
	r.log = log.String()
	if !strings.Contains(eng.called(), "close") {
		t.Errorf("the engine was not closed: %s", eng.called())
	}
	return r
}

// benchStatus is status.json's one benchmark.
func benchStatus(t *testing.T, st *jobdir.Status) jobdir.BenchmarkStatus {
	t.Helper()
	if st == nil || len(st.Benchmarks) != 1 {
		t.Fatalf("status.json: %+v, want one benchmark", st)
	}
	return st.Benchmarks[0]
}

// wantRunError: the node failed with a benchmark failure (exit 3), and status.json says so.
func wantRunError(t *testing.T, err error, st *jobdir.Status) {
	t.Helper()
	var re *RunError
	if !errors.As(err, &re) || re.ExitCode() != 3 {
		t.Fatalf("Run: %v, want a *RunError with exit code 3", err)
	}
	if st.Outcome != OutcomeFailure || st.ExitCode != 3 || !strings.Contains(st.Error, "1 of 1 benchmarks failed") {
		t.Errorf("status.json: outcome %q, exit %d, error %q; want failure, 3, the failed benchmark", st.Outcome, st.ExitCode, st.Error)
	}
	if st.ImageID != fakeID {
		t.Errorf("status.json: image %q, want %s (the engine's image.ref)", st.ImageID, fakeID)
	}
}

// The fake is faithful enough to run a benchmark to success: the tests below fail for
// the fault they inject, not for the set-up.
func TestRunLocalSucceedsOnAFakeEngine(t *testing.T) {
	eng := &runEngine{}
	r := runLocal(t, eng, nil)
	res, err, st := r.res, r.err, r.st
	if err != nil {
		t.Fatalf("Run: %v (engine calls: %s)", err, eng.called())
	}
	if b := benchStatus(t, st); st.Outcome != OutcomeSuccess || st.ExitCode != 0 || b.Outcome != OutcomeSuccess || b.ImageID != fakeID {
		t.Fatalf("status.json: %+v", st)
	}
	if res.Status.Outcome != OutcomeSuccess {
		t.Errorf("result: %+v", res.Status)
	}
	if c := eng.called(); !strings.Contains(c, "create") || !strings.Contains(c, "remove:c1") || strings.Contains(c, "stop") {
		t.Errorf("engine calls: %s; want the container created and removed, never stopped", c)
	}
}

// A container the engine cannot create fails the benchmark (exit 3) with the engine's
// reason, and nothing is started.
func TestRunContainerCreateFails(t *testing.T) {
	eng := &runEngine{createErr: errors.New("no such device: /dev/kfd")}
	r := runLocal(t, eng, nil)
	err, st := r.err, r.st
	wantRunError(t, err, st)
	b := benchStatus(t, st)
	if b.Outcome != OutcomeFailure || b.ExitCode != -1 || !strings.Contains(b.Error, "creating container") || !strings.Contains(b.Error, "/dev/kfd") {
		t.Errorf("benchmark status: %+v; want a failure naming the create and its cause", b)
	}
	if c := eng.called(); strings.Contains(c, "start") {
		t.Errorf("engine calls: %s; nothing may start", c)
	}
}

// A wait that ends with an error (not an exit) fails the benchmark: the container is
// stopped, diagnosed and removed.
func TestRunContainerWaitErrors(t *testing.T) {
	eng := &runEngine{waitErr: errors.New("unexpected EOF")}
	r := runLocal(t, eng, nil)
	res, err, st := r.res, r.err, r.st
	wantRunError(t, err, st)
	b := benchStatus(t, st)
	if b.Outcome != OutcomeFailure || !strings.Contains(b.Error, "waiting for the container failed: unexpected EOF") {
		t.Errorf("benchmark status: %+v; want a failure naming the wait's error", b)
	}
	if b.Diagnostics == "" {
		t.Errorf("no diagnostics: %+v", b)
	} else if _, err := os.Stat(filepath.Join(res.NodeDir, b.Diagnostics, "report.json")); err != nil {
		t.Errorf("diagnostics: %v", err)
	}
	if c := eng.called(); !strings.Contains(c, "stop") || !strings.Contains(c, "remove:c1") {
		t.Errorf("engine calls: %s; want the container stopped and removed", c)
	}
}

// The engine vanishes once the container has started: the log cannot be read, the wait
// ends with the lost connection, and every later call fails. The node still ends (it
// does not hang on the engine), fails the benchmark with the engine's error, and says in
// the log and the diagnostics what could not be done.
func TestRunEngineVanishesMidRun(t *testing.T) {
	eng := &runEngine{}
	eng.onStart = eng.vanish
	r := runLocal(t, eng, nil)
	res, err, st := r.res, r.err, r.st
	wantRunError(t, err, st)
	b := benchStatus(t, st)
	if b.Outcome != OutcomeFailure || !strings.Contains(b.Error, "waiting for the container failed") || !strings.Contains(b.Error, "Cannot connect to the Docker daemon") {
		t.Errorf("benchmark status: %+v; want a failure naming the lost engine", b)
	}
	log, _ := os.ReadFile(filepath.Join(res.NodeDir, b.Log))
	if !strings.Contains(string(log), "cannot read the container's log") {
		t.Errorf("the benchmark's log does not say its output is missing: %q", log)
	}
	rep, _ := os.ReadFile(filepath.Join(res.NodeDir, b.Diagnostics, "report.json"))
	if b.Diagnostics == "" || !strings.Contains(string(rep), "Cannot connect to the Docker daemon") {
		t.Errorf("the diagnostics (%q) do not say the engine was gone: %s", b.Diagnostics, rep)
	}
}

// status.json cannot be written once the benchmark has started (its name is taken by a
// folder, which no rename replaces, even as root): the benchmark succeeds, but the node
// does not, since the job folder does not say it did (collect would call it lost).
func TestRunStatusWriteFails(t *testing.T) {
	eng := &runEngine{}
	r := runLocal(t, eng, func(nd jobdir.NodeDir) {
		if err := os.Remove(nd.Status()); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(nd.Status(), 0o755); err != nil {
			t.Error(err)
		}
	})
	res, err, st, log := r.res, r.err, r.st, r.log
	var re *RunError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "recording this node's status") {
		t.Fatalf("Run: %v; want the status write's error, not a benchmark failure", err)
	}
	if st != nil {
		t.Errorf("status.json was read back: %+v", st)
	}
	if fi, err := os.Stat(filepath.Join(res.NodeDir, jobdir.StatusFile)); err != nil || !fi.IsDir() {
		t.Errorf("status.json: %v, %v; want the folder left as it was", fi, err)
	}
	if res.Status.Outcome != OutcomeSuccess || len(res.Status.Benchmarks) != 1 || res.Status.Benchmarks[0].Outcome != OutcomeSuccess {
		t.Errorf("result: %+v; want the benchmark's success, as it ran", res.Status)
	}
	if n := strings.Count(log, "could not write status.json"); n != 1 {
		t.Errorf("the node's log says %d times that status.json could not be written, want once:\n%s", n, log)
	}
}

// A container of the same name left from a crashed earlier run makes the create fail with a
// conflict: it is removed by name and the create tried once more (and only then: a create
// that works removes nothing first).
func TestRunRemovesALeftoverOnlyOnConflict(t *testing.T) {
	eng := &runEngine{conflicts: 1}
	r := runLocal(t, eng, nil)
	if r.err != nil {
		t.Fatalf("Run: %v (engine calls: %s)", r.err, eng.called())
	}
	if c := eng.called(); !strings.Contains(c, "create remove:benchctl-j1-0-r0-b create") {
		t.Errorf("engine calls: %s; want create, the leftover removed by name, create", c)
	}
	eng = &runEngine{}
	runLocal(t, eng, nil)
	if c := eng.called(); strings.Contains(c, "remove:benchctl-") {
		t.Errorf("engine calls: %s; nothing to remove before a create that works", c)
	}
}

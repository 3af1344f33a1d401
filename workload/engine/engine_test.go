package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
)

// api is an engine that records what reaches it; a call it does not implement panics on
// the nil embedded API.
type api struct {
	API
	conflicts int
	creates   []client.ContainerCreateOptions
	removed   []string
	stopped   []int
	listed    client.Filters
	drops     int // connections dropped before an answer, stop's and remove's
	// stuckFollow: a follow of the log misses the container's end and never ends
	stuckFollow bool
}

// drop is a connection the engine dropped, as the HTTP client says it.
func (a *api) drop() error {
	if a.drops > 0 {
		a.drops--
		return &url.Error{Op: "Post", URL: "http://podman/containers/c1/stop", Err: &net.OpError{Op: "read", Net: "unix", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	}
	return nil
}

func (a *api) ContainerCreate(_ context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	a.creates = append(a.creates, o)
	if a.conflicts > 0 {
		a.conflicts--
		return client.ContainerCreateResult{}, cerrdefs.ErrConflict.WithMessage("the name is in use")
	}
	return client.ContainerCreateResult{ID: "c1"}, nil
}

func (a *api) ContainerRemove(_ context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	if !o.Force {
		return client.ContainerRemoveResult{}, errors.New("not forced")
	}
	if err := a.drop(); err != nil {
		return client.ContainerRemoveResult{}, err
	}
	a.removed = append(a.removed, id)
	return client.ContainerRemoveResult{}, nil
}

func (a *api) ContainerStop(_ context.Context, _ string, o client.ContainerStopOptions) (client.ContainerStopResult, error) {
	if err := a.drop(); err != nil {
		return client.ContainerStopResult{}, err
	}
	a.stopped = append(a.stopped, *o.Timeout)
	return client.ContainerStopResult{}, nil
}

func (a *api) ContainerList(_ context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	a.listed = o.Filters
	return client.ContainerListResult{Items: []container.Summary{{ID: "c1", Names: []string{"/benchctl-1-0-r0-b"}, State: "exited",
		Labels: map[string]string{"io.benchctl.job": "1"}}}}, nil
}

// frames is the Engine API's multiplexed stream of out (stdout) and then errs (stderr): a
// header, then the bytes.
func frames(out, errs string) []byte {
	var b bytes.Buffer
	for _, f := range []struct {
		stream byte
		p      string
	}{{1, out}, {2, errs}} {
		if f.p != "" {
			b.Write([]byte{f.stream, 0, 0, 0, 0, 0, 0, byte(len(f.p))})
			b.WriteString(f.p)
		}
	}
	return b.Bytes()
}

func (a *api) ContainerLogs(ctx context.Context, _ string, o client.ContainerLogsOptions) (client.ContainerLogsResult, error) {
	if o.Follow && a.stuckFollow {
		// delivers stdout's line, then waits for ever (until it is closed or ctx ends)
		pr, pw := io.Pipe()
		go func() {
			pw.Write(frames("out\n", ""))
			<-ctx.Done()
			pw.CloseWithError(ctx.Err())
		}()
		return pr, nil
	}
	return io.NopCloser(bytes.NewReader(frames("out\n", "err\n"))), nil
}

// ContainerWait: the container has stopped.
func (a *api) ContainerWait(context.Context, string, client.ContainerWaitOptions) client.ContainerWaitResult {
	res := make(chan container.WaitResponse, 1)
	res <- container.WaitResponse{StatusCode: 0}
	return client.ContainerWaitResult{Result: res, Error: make(chan error, 1)}
}

// A spec reaches the engine as the container it describes: argv as entrypoint and
// arguments (never a shell line), every mount a bind, every device, GPU request and limit.
func TestConfigOfASpec(t *testing.T) {
	s := workload.Spec{Name: "n", Image: "img", Command: []string{"/b", "--x", "a b"}, Workdir: "/w", Env: []string{"A=1"},
		Labels: map[string]string{"k": "v"}, User: "1000:1000", Mounts: []manifest.Mount{{Source: "/h", Target: "/c", ReadOnly: true}},
		Devices:     []manifest.Device{{Host: "/dev/kfd", Container: "/dev/kfd", Permissions: "rwm"}},
		GPURequests: []workload.GPURequest{{Driver: "nvidia", Count: -1, Capabilities: [][]string{{"gpu"}}}},
		GroupAdd:    []string{"44"}, Network: "host", IPC: "host", ShmSize: 1 << 30, CapAdd: []string{"SYS_PTRACE"},
		SecurityOpt: []string{"seccomp=unconfined"}, UserNS: "keep-id", Ulimits: []manifest.Limit{{Name: "memlock", Soft: -1, Hard: -1}}}
	cfg, hc := Config(s)
	if !reflect.DeepEqual(cfg.Entrypoint, []string{"/b"}) || !reflect.DeepEqual(cfg.Cmd, []string{"--x", "a b"}) || cfg.User != "1000:1000" ||
		cfg.WorkingDir != "/w" || cfg.Env[0] != "A=1" || cfg.Labels["k"] != "v" {
		t.Errorf("config %+v", cfg)
	}
	if len(hc.Mounts) != 1 || hc.Mounts[0].Type != "bind" || !hc.Mounts[0].ReadOnly || len(hc.Devices) != 1 || hc.Devices[0].CgroupPermissions != "rwm" ||
		len(hc.DeviceRequests) != 1 || hc.DeviceRequests[0].Count != -1 || hc.NetworkMode != "host" || hc.IpcMode != "host" || hc.ShmSize != 1<<30 ||
		hc.UsernsMode != "keep-id" || len(hc.Ulimits) != 1 || hc.Ulimits[0].String() != "memlock=-1:-1" || hc.GroupAdd[0] != "44" {
		t.Errorf("host config %+v", hc)
	}
}

// A container of the same name left from a crashed run is removed and the create tried
// once more; a second conflict is the caller's.
func TestCreateRemovesALeftoverOfTheSameName(t *testing.T) {
	a := &api{conflicts: 1}
	id, err := New(a).Create(context.Background(), workload.Spec{Name: "benchctl-1-0-r0-b", Command: []string{"/b"}})
	if err != nil || id != "c1" || len(a.creates) != 2 || !reflect.DeepEqual(a.removed, []string{"benchctl-1-0-r0-b"}) {
		t.Errorf("%q, %v; creates %d, removed %v", id, err, len(a.creates), a.removed)
	}
	a = &api{conflicts: 2}
	if _, err := New(a).Create(context.Background(), workload.Spec{Name: "x", Command: []string{"/b"}}); !cerrdefs.IsConflict(err) {
		t.Errorf("second conflict: %v", err)
	}
}

// Stop's grace is whole seconds, rounded up (a grace of 0 kills at once); Remove forces;
// List filters by every label and names containers without the engine's slash; Logs
// writes stdout and stderr demultiplexed.
func TestStopRemoveListLogs(t *testing.T) {
	a := &api{}
	rt := New(a)
	for _, g := range []time.Duration{0, 1500 * time.Millisecond, 10 * time.Second} {
		if err := rt.Stop(context.Background(), "c1", g); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(a.stopped, []int{0, 2, 10}) {
		t.Errorf("stop timeouts %v", a.stopped)
	}
	if err := rt.Remove(context.Background(), "c1"); err != nil || a.removed[0] != "c1" {
		t.Errorf("remove: %v %v", err, a.removed)
	}
	ps, err := rt.List(context.Background(), map[string]string{"io.benchctl.job": "1", "io.benchctl.rank": "0"})
	if err != nil || len(ps) != 1 || ps[0].Name != "benchctl-1-0-r0-b" || ps[0].State != "exited" {
		t.Errorf("list: %+v %v", ps, err)
	}
	if got := a.listed["label"]; len(got) != 2 || !got["io.benchctl.job=1"] || !got["io.benchctl.rank=0"] {
		t.Errorf("filters %v", a.listed)
	}
	var out bytes.Buffer
	if err := rt.Logs(context.Background(), "c1", &out); err != nil || out.String() != "out\nerr\n" {
		t.Errorf("logs %q %v", out.String(), err)
	}
	if strings.Contains(out.String(), "\x01") {
		t.Error("the stream's headers reached the log")
	}
}

// What an engine is, from its version answer and /info: Podman by its component (its
// version is the answer's, the component's is listed), rootless and CDI and the data root
// from /info; a failed /info is facts not known, and why.
func TestFactsOf(t *testing.T) {
	pv := client.ServerVersionResult{Version: "4.3.1", APIVersion: "1.41", Os: "linux", Arch: "amd64",
		Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}}
	info := &client.SystemInfoResult{Info: system.Info{SecurityOptions: []string{"name=seccomp,profile=default", "name=rootless"},
		CDISpecDirs: []string{"/etc/cdi"}, DockerRootDir: "/var/lib/containers"}}
	f := FactsOf(pv, info, nil)
	if f.Kind != "podman" || f.Name != "Podman Engine" || f.Version != "4.3.1" || f.OS != "linux" || !f.Rootless || !f.InfoKnown ||
		f.DataRoot != "/var/lib/containers" || len(f.CDISpecDirs) != 1 || len(f.Components) != 1 {
		t.Errorf("%+v", f)
	}
	f = FactsOf(client.ServerVersionResult{Version: "28.0.1", APIVersion: "1.48"}, nil, errors.New("info: boom"))
	if f.Kind != "docker" || f.InfoKnown || f.InfoProblem != "info: boom" || f.Rootless || f.Components == nil {
		t.Errorf("%+v", f)
	}
}

// Docker under RootlessKit names it among its components: rootless is known from /version
// alone (VersionFacts asks nothing else), as from /info's security options.
func TestRootlessFromTheVersionAnswer(t *testing.T) {
	v := client.ServerVersionResult{Platform: client.PlatformInfo{Name: "Docker Engine - Community"}, Version: "28.3.0", APIVersion: "1.51",
		Components: []system.ComponentVersion{{Name: "Engine", Version: "28.3.0"}, {Name: "rootlesskit", Version: "2.3.4"}}}
	f, err := VersionFacts(context.Background(), versionOnly{v})
	if err != nil || f.Kind != "docker" || !f.Rootless || f.InfoKnown || f.InfoProblem != "" || len(f.Components) != 2 {
		t.Errorf("%+v %v", f, err)
	}
	v.Components = v.Components[:1]
	if f, _ := VersionFacts(context.Background(), versionOnly{v}); f.Rootless {
		t.Errorf("rootful Docker taken as rootless: %+v", f)
	}
}

// versionOnly answers /version and nothing else.
type versionOnly struct{ v client.ServerVersionResult }

func (o versionOnly) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return o.v, nil
}

// execAPI is an engine whose exec create fails as a gone container's does.
type execAPI struct {
	api
}

func (execAPI) ExecCreate(context.Context, string, client.ExecCreateOptions) (client.ExecCreateResult, error) {
	return client.ExecCreateResult{}, cerrdefs.ErrNotFound.WithMessage("No such container: c9")
}
func (execAPI) ExecAttach(context.Context, string, client.ExecAttachOptions) (client.ExecAttachResult, error) {
	panic("attached after a failed create")
}
func (execAPI) ExecInspect(context.Context, string, client.ExecInspectOptions) (client.ExecInspectResult, error) {
	panic("inspected after a failed create")
}

// Exec refuses an empty command and a client that cannot exec, and names the container the
// engine could not exec in (the real engines are the runtime suite's, in tests/).
func TestExecErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := New(&api{}).Exec(ctx, "c1", workload.Command{}); err == nil || !strings.Contains(err.Error(), "no command") {
		t.Fatalf("empty command: %v", err)
	}
	if _, err := New(&api{}).Exec(ctx, "c1", workload.Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "cannot run a command") {
		t.Fatalf("a client without exec: %v", err)
	}
	code, err := New(&execAPI{}).Exec(ctx, "c9", workload.Command{Argv: []string{"true"}})
	if err == nil || code != -1 || !strings.Contains(err.Error(), "exec in c9") || !cerrdefs.IsNotFound(err) {
		t.Fatalf("a gone container: %d, %v", code, err)
	}
}

// A stop or remove whose connection the engine dropped (a Podman service ended by the job's
// end signal and started again) is tried again; one that keeps failing, or an answer that
// is an error, is not tried forever.
func TestStopAndRemoveSurviveADroppedConnection(t *testing.T) {
	a := &api{drops: 2}
	r := New(a)
	if err := r.Stop(context.Background(), "c1", time.Second); err != nil || len(a.stopped) != 1 {
		t.Fatalf("stop: %v, stopped %v", err, a.stopped)
	}
	a.drops = 1
	if err := r.Remove(context.Background(), "c1"); err != nil || len(a.removed) != 1 {
		t.Fatalf("remove: %v, removed %v", err, a.removed)
	}
	a.drops = 100
	if err := r.Stop(context.Background(), "c1", time.Second); !errors.Is(err, syscall.ECONNRESET) || a.drops != 100-Tries {
		t.Fatalf("an engine that never answers: %v after %d tries", err, 100-a.drops)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a.drops = 100
	if err := r.Remove(ctx, "c1"); err == nil || a.drops != 99 {
		t.Fatalf("a cancelled remove: %v after %d tries", err, 100-a.drops)
	}
	if dropped(cerrdefs.ErrNotFound.WithMessage("no such container")) || dropped(errors.New("conflict")) {
		t.Fatal("an engine's answer taken for a dropped connection")
	}
}

// A follow of the log that misses the container's end (Podman 4.3's, when the container
// ended before it was asked for) is ended once the container has stopped, and the rest is
// read from the whole log: every line once, in order, no hang.
func TestLogsOfAFollowThatMissesTheEnd(t *testing.T) {
	r := Runtime{API: &api{stuckFollow: true}, LogDrain: 10 * time.Millisecond}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- r.Logs(context.Background(), "c1", &out) }()
	select {
	case err := <-done:
		if err != nil || out.String() != "out\nerr\n" {
			t.Fatalf("%v: %q", err, out.String())
		}
	case <-time.After(time.Minute): // a bound on a hang
		t.Fatal("Logs never returned")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Runtime{API: &api{stuckFollow: true}}).Logs(ctx, "c1", io.Discard); err == nil {
		t.Error("a cancelled Logs returned no error")
	}
}

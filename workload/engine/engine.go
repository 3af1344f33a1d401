// Package engine is the workload.Runtime of a Docker or Podman Engine, through the Engine
// API (moby's client): the one place outside image building that speaks its types. A
// benchmark's process is a container; its labels, logs, stop grace and diagnostics are the
// container's.
package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/go-units"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/internal/enginekind"
	"github.com/benchctl/benchctl/workload"
)

// API is the part of the Engine API a Runtime calls. *client.Client satisfies it; tests
// fake it to check what reaches the engine.
type API interface {
	ContainerCreate(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerStart(ctx context.Context, id string, opts client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerLogs(ctx context.Context, id string, opts client.ContainerLogsOptions) (client.ContainerLogsResult, error)
	ContainerWait(ctx context.Context, id string, opts client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerStop(ctx context.Context, id string, opts client.ContainerStopOptions) (client.ContainerStopResult, error)
	ContainerRemove(ctx context.Context, id string, opts client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerList(ctx context.Context, opts client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerTop(ctx context.Context, id string, opts client.ContainerTopOptions) (client.ContainerTopResult, error)
	ServerVersion(ctx context.Context, opts client.ServerVersionOptions) (client.ServerVersionResult, error)
}

var (
	_ API              = (*client.Client)(nil)
	_ workload.Runtime = Runtime{}
)

// Runtime runs benchmarks' processes as containers of one engine.
type Runtime struct {
	API API
	// RemoveTimeout bounds the remove of a leftover container of the same name before a
	// create is tried again (5 s when zero).
	RemoveTimeout time.Duration
	// LogDrain is how long Logs waits for a follow to end once the container has stopped
	// (2 s when zero), before it reads the rest from the whole log.
	LogDrain time.Duration
}

// New is the Runtime of the engine api answers for.
func New(api API) Runtime { return Runtime{API: api} }

// Create creates the container; a name in use (a container left from a crashed earlier
// run) is removed and the create tried once more.
func (r Runtime) Create(ctx context.Context, s workload.Spec) (string, error) {
	cfg, hc := Config(s)
	created, err := r.API.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: s.Name})
	if err != nil && cerrdefs.IsConflict(err) {
		rt := r.RemoveTimeout
		if rt <= 0 {
			rt = 5 * time.Second
		}
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rt)
		_, _ = r.API.ContainerRemove(pctx, s.Name, client.ContainerRemoveOptions{Force: true})
		cancel()
		created, err = r.API.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: s.Name})
	}
	if err != nil {
		return "", err
	}
	return created.ID, nil
}

// Wait waits for the container's next exit.
func (r Runtime) Wait(ctx context.Context, id string) <-chan workload.Exit {
	out := make(chan workload.Exit, 1)
	w := r.API.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	go func() {
		select {
		case res := <-w.Result:
			out <- workload.Exit{Code: int(res.StatusCode)}
		case err := <-w.Error:
			out <- workload.Exit{Code: -1, Err: err}
		}
	}()
	return out
}

// Start starts the container.
func (r Runtime) Start(ctx context.Context, id string) error {
	_, err := r.API.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

// Logs follows the container's log, its stdout and stderr demultiplexed into w, until the
// container has ended and its log is read. A follow still open LogDrain after the container
// stopped is ended, and what it had not delivered is read from the whole log: Podman 4.3's
// follow can miss an exit that came before it was asked for, and then waits for ever.
func (r Runtime) Logs(ctx context.Context, id string, w io.Writer) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := r.API.ContainerLogs(fctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	out, errs := &countingWriter{w: w}, &countingWriter{w: w}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(out, errs, rc)
		done <- err
	}()
	stopped := make(chan struct{})
	waited := r.API.ContainerWait(fctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	go func() {
		select {
		case <-waited.Result:
			close(stopped)
		case <-waited.Error: // the follow decides, as it did before this watch
		}
	}()
	select {
	case err := <-done:
		return err
	case <-stopped:
	}
	drain := r.LogDrain
	if drain <= 0 {
		drain = 2 * time.Second
	}
	select {
	case err := <-done:
		return err
	case <-time.After(drain):
	}
	cancel() // the follow missed the end
	rc.Close()
	<-done
	if ctx.Err() != nil {
		return ctx.Err()
	}
	all, err := r.API.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return err
	}
	defer all.Close()
	_, err = stdcopy.StdCopy(&skipWriter{w: w, skip: out.n}, &skipWriter{w: w, skip: errs.n}, all)
	return err
}

// countingWriter counts what it passes on to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// skipWriter drops its first skip bytes, and passes on the rest to w.
type skipWriter struct {
	w    io.Writer
	skip int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip >= int64(n) {
		s.skip -= int64(n)
		return n, nil
	}
	p = p[s.skip:]
	s.skip = 0
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// Stop stops the container: SIGTERM, then SIGKILL after grace (whole seconds, at least 0).
// A connection the engine dropped or refused is tried again (see retry).
func (r Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int((grace + time.Second - 1) / time.Second)
	return retry(ctx, func() error {
		_, err := r.API.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &secs})
		return err
	})
}

// Remove removes the container by force. A connection the engine dropped or refused is
// tried again (see retry).
func (r Runtime) Remove(ctx context.Context, id string) error {
	return retry(ctx, func() error {
		_, err := r.API.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
		return err
	})
}

// Tries bounds how often retry calls.
const Tries = 4

// retry calls f until it returns anything but a dropped connection (Tries at most, a short
// pause between, ctx permitting). It is for the calls that end a job's containers, which
// must not be lost to an engine that restarts under them: the end of a Slurm job signals
// every process of it, a Podman service benchctl started among them, which is started again
// (podmanservice) while the run still stops and removes its containers. A stop or remove
// tried twice does no harm: the second finds the container stopped (no error) or gone (an
// error saying so, as any caller already handles).
func retry(ctx context.Context, f func() error) error {
	var err error
	for i := range Tries {
		if err = f(); err == nil || !dropped(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i+1) * 100 * time.Millisecond):
		}
	}
	return err
}

// dropped tells an error of the connection (refused, reset, closed before an answer) from
// one the engine answered with.
func dropped(err error) bool {
	return client.IsErrConnectionFailed(err) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ENOENT) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// List finds the containers, running or not, labelled with every one of labels.
func (r Runtime) List(ctx context.Context, labels map[string]string) ([]workload.Process, error) {
	f := make(client.Filters)
	for k, v := range labels {
		f = f.Add("label", k+"="+v)
	}
	res, err := r.API.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	out := make([]workload.Process, 0, len(res.Items))
	for _, c := range res.Items {
		p := workload.Process{ID: c.ID, State: string(c.State), Labels: c.Labels}
		if len(c.Names) > 0 {
			p.Name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, p)
	}
	return out, nil
}

// Inspect is the container's state.
func (r Runtime) Inspect(ctx context.Context, id string) (workload.State, error) {
	insp, err := r.API.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return workload.State{}, err
	}
	st := insp.Container.State
	if st == nil {
		return workload.State{}, nil
	}
	return workload.State{Running: st.Running, ExitCode: st.ExitCode, OOMKilled: st.OOMKilled, Error: st.Error, Pid: st.Pid}, nil
}

// podmanTopArgs are the AIX format descriptors asked of Podman's top: with them Podman reads
// the container's processes from /proc itself; with no ps_args (Docker's default, ps -ef on
// the host) Podman 4 runs ps inside the container, which an image without ps lacks (the
// answer then has no body: "processes: EOF").
var podmanTopArgs = []string{"pid,ppid,user,etime,args"}

// Top lists the container's processes (Podman's engine asked in the form it answers
// without ps in the image).
func (r Runtime) Top(ctx context.Context, id string) (workload.Top, error) {
	var opts client.ContainerTopOptions
	if v, err := r.API.ServerVersion(ctx, client.ServerVersionOptions{}); err == nil && isPodman(v) {
		opts.Arguments = podmanTopArgs
	}
	top, err := r.API.ContainerTop(ctx, id, opts)
	if err != nil {
		return workload.Top{}, err
	}
	return workload.Top{Titles: top.Titles, Processes: top.Processes}, nil
}

// Describe is the engine's name and version: "29.0.0 (API 1.52)", or "Podman Engine 4.3.1
// (API 1.41)".
func (r Runtime) Describe(ctx context.Context) (string, error) {
	v, err := r.API.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", err
	}
	d := v.Version + " (API " + v.APIVersion + ")"
	if isPodman(v) {
		d = "Podman Engine " + d
	}
	return d, nil
}

// isPodman says whether an engine's version is Podman's (enginekind).
func isPodman(v client.ServerVersionResult) bool {
	return FactsOf(v, nil, nil).Kind == enginekind.Podman
}

// Config is a Spec as the Engine API's container settings.
func Config(s workload.Spec) (*container.Config, *container.HostConfig) {
	var entry, cmd []string
	if len(s.Command) > 0 {
		entry, cmd = s.Command[:1], s.Command[1:]
	}
	cfg := &container.Config{Image: s.Image, Entrypoint: entry, Cmd: cmd, WorkingDir: s.Workdir,
		Env: s.Env, Labels: s.Labels, User: s.User}
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(s.Network),
		IpcMode:     container.IpcMode(s.IPC),
		ShmSize:     s.ShmSize,
		CapAdd:      s.CapAdd,
		GroupAdd:    s.GroupAdd,
		SecurityOpt: s.SecurityOpt,
		UsernsMode:  container.UsernsMode(s.UserNS),
	}
	for _, m := range s.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	for _, d := range s.Devices {
		hc.Devices = append(hc.Devices, container.DeviceMapping{PathOnHost: d.Host, PathInContainer: d.Container, CgroupPermissions: d.Permissions})
	}
	for _, g := range s.GPURequests {
		hc.DeviceRequests = append(hc.DeviceRequests, container.DeviceRequest{Driver: g.Driver, Count: g.Count, DeviceIDs: g.DeviceIDs, Capabilities: g.Capabilities})
	}
	for _, u := range s.Ulimits {
		hc.Ulimits = append(hc.Ulimits, &units.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	return cfg, hc
}

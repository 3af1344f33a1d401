//go:build linux

package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	shim "github.com/benchctl/benchctl/internal/procshim"
	"github.com/benchctl/benchctl/manifest"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/workload"
)

// Marker variables every process of the runtime carries in its environment.
const (
	// MarkerName is the process's name (its Spec.Name).
	MarkerName = "BENCHCTL_PROCESS"
	// MarkerLabels is its labels, as a JSON object.
	MarkerLabels = "BENCHCTL_LABELS"
)

// Runtime runs benchmarks' processes as children of this program. Its zero value is not
// usable: see New.
type Runtime struct {
	logDir string
	self   string

	mu    sync.Mutex
	procs map[string]*proc
}

var _ workload.Runtime = (*Runtime)(nil)

// proc is one process of this runtime.
type proc struct {
	spec    workload.Spec
	log     string
	program string
	cmd     *exec.Cmd
	pgid    int
	started chan struct{} // closed when the process has started (its log is there)
	done    chan struct{} // closed when the process has ended and been reaped
	exit    workload.Exit
}

// New is a process runtime that keeps each process's output (stdout and stderr, in the
// order written) in a file of logDir, which it creates (0700). The processes start as this
// program (os.Executable), which this package's init makes their shim.
func New(logDir string) (*Runtime, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the process runtime: finding this program: %w", err)
	}
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fmt.Errorf("the process runtime: %w", err)
	}
	return &Runtime{logDir: logDir, self: self, procs: map[string]*proc{}}, nil
}

// Refused is a spec setting that has no meaning without a container engine: Field names it
// (as the manifest spells it), Hint says what to do instead.
type Refused struct {
	Field string
	Hint  string
}

func (e *Refused) Error() string {
	return fmt.Sprintf("%s has no meaning for the process runtime (no container engine): %s", e.Field, e.Hint)
}

// InvalidInput makes a refusal exit 4.
func (e *Refused) InvalidInput() bool { return true }

// check refuses what a process cannot be given: anything but identity mounts, devices,
// engine GPU requests, capabilities, security options, a user namespace, another user, a
// network or IPC namespace of its own, a shm size.
func check(s workload.Spec) error {
	launcher := "give it where the node's environment is made (srun --container-mounts, apptainer --bind, the pod's volumes)"
	for _, m := range s.Mounts {
		if filepath.Clean(m.Source) != filepath.Clean(m.Target) {
			return &Refused{Field: "mounts (" + m.Source + ":" + m.Target + ")", Hint: "a process sees the node's own files; mount " + m.Source + " at " + m.Target + " where the environment is made: " + launcher}
		}
	}
	switch {
	case len(s.Devices) > 0:
		return &Refused{Field: "container.devices", Hint: "a process sees the node's devices; " + launcher}
	case len(s.GPURequests) > 0:
		return &Refused{Field: "GPU requests of an engine", Hint: "the process runtime gives GPUs through CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES"}
	case len(s.CapAdd) > 0:
		return &Refused{Field: "container.capAdd", Hint: "a process has this benchctl's privileges"}
	case len(s.SecurityOpt) > 0:
		return &Refused{Field: "container.securityOpt", Hint: "a process has this benchctl's confinement"}
	case s.UserNS != "":
		return &Refused{Field: "container.userns", Hint: "a process runs as this benchctl's user"}
	case s.User != "":
		return &Refused{Field: "container.user", Hint: "a process runs as this benchctl's user; run benchctl as the user you want"}
	case len(s.GroupAdd) > 0:
		return &Refused{Field: "container.groupAdd", Hint: "a process has this benchctl's groups"}
	case s.Network != "" && s.Network != "host":
		return &Refused{Field: "container.network (" + s.Network + ")", Hint: "a process uses the node's network"}
	case s.IPC != "" && s.IPC != "host":
		return &Refused{Field: "container.ipc (" + s.IPC + ")", Hint: "a process shares the node's IPC"}
	case s.ShmSize != 0:
		return &Refused{Field: "container.shmSize", Hint: "a process uses the node's /dev/shm"}
	}
	for _, l := range s.Ulimits {
		if _, ok := shim.Rlimits[l.Name]; !ok {
			return &Refused{Field: "container.ulimits (" + l.Name + ")", Hint: "no such limit on Linux"}
		}
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		return errors.New("the process runtime: no command to run")
	}
	return nil
}

// Create checks spec and keeps it; the process starts with Start. A process of the same
// name that has ended is replaced; one that still runs is an error.
func (r *Runtime) Create(_ context.Context, s workload.Spec) (string, error) {
	if err := check(s); err != nil {
		return "", err
	}
	if s.Name == "" || strings.ContainsAny(s.Name, "/\x00") {
		return "", fmt.Errorf("the process runtime: the name %q cannot name a log file", s.Name)
	}
	program, err := lookPath(s.Command[0], envValue(s.Env, "PATH"), s.Workdir)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.procs[s.Name]; ok && p.cmd != nil && !isClosed(p.done) {
		return "", fmt.Errorf("the process runtime: a process named %s is running", s.Name)
	}
	r.procs[s.Name] = &proc{spec: s, program: program, log: filepath.Join(r.logDir, s.Name+".log"), started: make(chan struct{}), done: make(chan struct{})}
	return s.Name, nil
}

// pgidOf is p's process group (its leader's pid), 0 before it started.
func (r *Runtime) pgidOf(p *proc) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return p.pgid
}

func (r *Runtime) get(id string) (*proc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.procs[id]
	if !ok {
		return nil, fmt.Errorf("the process runtime: no process %s", id)
	}
	return p, nil
}

// Wait delivers the process's end.
func (r *Runtime) Wait(ctx context.Context, id string) <-chan workload.Exit {
	out := make(chan workload.Exit, 1)
	p, err := r.get(id)
	if err != nil {
		out <- workload.Exit{Code: -1, Err: err}
		return out
	}
	go func() {
		select {
		case <-p.done:
			out <- p.exit
		case <-ctx.Done():
			out <- workload.Exit{Code: -1, Err: ctx.Err()}
		}
	}()
	return out
}

// Start starts the process: this program as its shim, in a process group of its own, in
// its working folder, its output appended to its log.
func (r *Runtime) Start(_ context.Context, id string) error {
	p, err := r.get(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("the process runtime: %s has started already", id)
	}
	logf, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("the process runtime: its log: %w", err)
	}
	defer logf.Close() // the child has its own descriptor once started
	labels, _ := json.Marshal(p.spec.Labels)
	env := append(append([]string{}, p.spec.Env...), MarkerName+"="+p.spec.Name, MarkerLabels+"="+string(labels))
	path := p.program
	if len(p.spec.Ulimits) > 0 {
		// limits to set on the child: this program starts as its shim, which sets them and
		// executes the benchmark's program (Go's fork has no hook between fork and exec)
		req, _ := json.Marshal(shim.Request{Program: p.program, Limits: shimLimits(p.spec.Ulimits)})
		path, env = r.self, append(env, shim.Env+"="+string(req))
	}
	cmd := &exec.Cmd{Path: path, Args: p.spec.Command, Env: env, Dir: p.spec.Workdir, Stdout: logf, Stderr: logf,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("the process runtime: starting %s: %w", p.spec.Command[0], err)
	}
	p.cmd, p.pgid = cmd, cmd.Process.Pid
	close(p.started)
	go func() {
		err := cmd.Wait()
		p.exit = exitOf(cmd, err)
		close(p.done)
	}()
	return nil
}

// shimLimits are the spec's limits as the shim takes them.
func shimLimits(ls []manifest.Limit) []shim.Limit {
	out := make([]shim.Limit, len(ls))
	for i, l := range ls {
		out[i] = shim.Limit{Name: l.Name, Soft: l.Soft, Hard: l.Hard}
	}
	return out
}

// exitOf is how a process ended: its code, or 128+n for a signal n, as a shell says it.
func exitOf(cmd *exec.Cmd, err error) workload.Exit {
	st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && st.Signaled():
		return workload.Exit{Code: 128 + int(st.Signal())}
	case cmd.ProcessState != nil:
		return workload.Exit{Code: cmd.ProcessState.ExitCode()}
	}
	return workload.Exit{Code: -1, Err: err}
}

// Logs copies the process's log to w as it grows, until the process has ended and the log
// is read to its end, or ctx ends.
func (r *Runtime) Logs(ctx context.Context, id string, w io.Writer) error {
	p, err := r.get(id)
	if err != nil {
		return err
	}
	select { // its log is made when it starts
	case <-p.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	f, err := os.Open(p.log)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		if isClosed(p.done) {
			// ended: what it wrote before it ended is in the file; read it to the end once more
			if n, _ := io.Copy(w, f); n == 0 {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop sends the process's group SIGTERM, and SIGKILL after grace (or at once when the
// process has ended but its group has not).
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	p, err := r.get(id)
	if err != nil {
		return err
	}
	pgid := r.pgidOf(p)
	if pgid == 0 {
		return nil // never started
	}
	_ = unix.Kill(-pgid, unix.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	case <-ctx.Done():
	}
	_ = unix.Kill(-pgid, unix.SIGKILL) // what the process started goes with it
	return nil
}

// Remove kills the process's group and forgets it; one this runtime did not start (a
// process a crashed benchctl left, found by List) is found by its marker and its group
// killed.
func (r *Runtime) Remove(_ context.Context, id string) error {
	r.mu.Lock()
	p, ok := r.procs[id]
	delete(r.procs, id)
	r.mu.Unlock()
	if ok {
		if pgid := r.pgidOf(p); pgid != 0 {
			_ = unix.Kill(-pgid, unix.SIGKILL)
			<-p.done
		}
		return nil
	}
	found, err := scan()
	if err != nil {
		return err
	}
	for _, f := range found {
		if f.name == id {
			_ = unix.Kill(-f.pgid, unix.SIGKILL)
		}
	}
	return nil
}

// List finds every process whose labels include labels: this runtime's, and any a benchctl
// of this user left on the node (by its marker, read from /proc).
func (r *Runtime) List(_ context.Context, labels map[string]string) ([]workload.Process, error) {
	var out []workload.Process
	seen := map[string]bool{}
	r.mu.Lock()
	for name, p := range r.procs {
		if hasLabels(p.spec.Labels, labels) {
			out = append(out, workload.Process{ID: name, Name: name, State: stateOf(p), Labels: p.spec.Labels})
			seen[name] = true
		}
	}
	r.mu.Unlock()
	found, err := scan()
	if err != nil {
		return out, err
	}
	for _, f := range found {
		if !seen[f.name] && hasLabels(f.labels, labels) {
			out = append(out, workload.Process{ID: f.name, Name: f.name, State: "running", Labels: f.labels})
			seen[f.name] = true
		}
	}
	return out, nil
}

func stateOf(p *proc) string {
	switch {
	case p.cmd == nil:
		return "created"
	case isClosed(p.done):
		return "exited"
	}
	return "running"
}

// Inspect is the process's state.
func (r *Runtime) Inspect(_ context.Context, id string) (workload.State, error) {
	p, err := r.get(id)
	if err != nil {
		return workload.State{}, err
	}
	pgid := r.pgidOf(p)
	if pgid == 0 {
		return workload.State{}, nil
	}
	if isClosed(p.done) {
		return workload.State{ExitCode: p.exit.Code}, nil
	}
	return workload.State{Running: true, Pid: pgid}, nil
}

// Top lists the processes of the process's group, with their commands.
func (r *Runtime) Top(_ context.Context, id string) (workload.Top, error) {
	p, err := r.get(id)
	if err != nil {
		return workload.Top{}, err
	}
	pgid := r.pgidOf(p)
	if pgid == 0 || isClosed(p.done) {
		return workload.Top{}, fmt.Errorf("the process runtime: %s is not running", id)
	}
	top := workload.Top{Titles: []string{"PID", "PPID", "CMD"}}
	for _, pr := range groupMembers(pgid) {
		top.Processes = append(top.Processes, []string{strconv.Itoa(pr.pid), strconv.Itoa(pr.ppid), pr.cmdline})
	}
	if len(top.Processes) == 0 {
		return top, fmt.Errorf("the process runtime: no process in %s's group", id)
	}
	return top, nil
}

// Describe says what the runtime is.
func (r *Runtime) Describe(ctx context.Context) (string, error) {
	f, _ := r.Facts(ctx)
	return "benchctl's process runtime (no container engine), Linux " + f.Version, nil
}

// Facts is the runtime's kind and the kernel's release.
func (r *Runtime) Facts(context.Context) (workload.Facts, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return workload.Facts{Kind: "process"}, err
	}
	return workload.Facts{Kind: "process", Name: "benchctl process runtime", Version: unix.ByteSliceToString(u.Release[:]),
		OS: "linux", Arch: unix.ByteSliceToString(u.Machine[:]), InfoKnown: true}, nil
}

// Exec runs c beside the process: in its group (so that Stop and Remove end it too), its
// working folder and environment (c.Env added). ctx's end kills it.
func (r *Runtime) Exec(ctx context.Context, id string, c workload.Command) (int, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return -1, errors.New("exec: no command to run")
	}
	p, err := r.get(id)
	if err != nil {
		return -1, err
	}
	pgid := r.pgidOf(p)
	if pgid == 0 || isClosed(p.done) {
		return -1, fmt.Errorf("exec in %s: it is not running", id)
	}
	env := append(append([]string{}, p.spec.Env...), c.Env...)
	program, err := lookPath(c.Argv[0], envValue(env, "PATH"), p.spec.Workdir)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	labels, _ := json.Marshal(p.spec.Labels)
	cmd := exec.CommandContext(ctx, program, c.Argv[1:]...)
	cmd.Args[0] = c.Argv[0]
	cmd.Env = append(env, MarkerName+"="+p.spec.Name, MarkerLabels+"="+string(labels))
	cmd.Dir = p.spec.Workdir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	cmd.WaitDelay = time.Second // a Stdin that never ends does not hold Exec
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return -1, fmt.Errorf("exec in %s: %w", id, err)
		}
	}
	return exitOf(cmd, nil).Code, nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val // the last one wins, as execve's environment reads it
		}
	}
	return v
}

// lookPath is the program file resolves to with the child's PATH (a name with a slash is
// taken as it is, relative to dir); an absolute path, so the shim executes what was found.
func lookPath(file, path, dir string) (string, error) {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		if err := executable(file); err != nil {
			return "", fmt.Errorf("the process runtime: %s: %w", file, err)
		}
		return file, nil
	}
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("the process runtime: %s is not in PATH (%s)", file, path)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

//go:build linux

// Package podmanservice starts Podman's API service for one node's run, where Podman is
// installed but no service answers (RHEL-like nodes that ship Podman without a running
// socket): `podman system service` as the invoking user, on a socket in a folder only that
// user can read, for as long as the node's run lasts. It is stopped when the run ends
// (Stop), ends with benchctl if benchctl dies (the kernel's parent-death signal), and
// carries a marker in its environment (Marker: the job and rank) by which `benchctl
// cleanup` finds one a crash left.
package podmanservice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/internal/proctable"
)

// Marker is the variable in the service's environment that names its job and rank
// ("JOB/RANK").
const Marker = "BENCHCTL_PODMAN_SERVICE"

// Options say how to start a service.
type Options struct {
	Podman string // the podman program; "podman" (found in PATH) when empty
	Job    string // the job it serves, for the marker
	Rank   int
	// Dir is the folder the private folder is made in: $XDG_RUNTIME_DIR when set, else the
	// system's temporary folder, when empty.
	Dir string
	// Ready bounds the wait for the socket to answer (30 s when zero), at the start and
	// after a restart.
	Ready time.Duration
	// Restarts bounds how often a service that ended unasked is started again
	// (DefaultRestarts when zero; negative: never).
	Restarts int
	// Log says when the service ended unasked and was started again (slog's default
	// logger when nil).
	Log *slog.Logger
}

// DefaultRestarts is how often a service that ended unasked is started again, in one run.
const DefaultRestarts = 3

// Service is a running `podman system service`.
//
// It is supervised: a service that ends unasked is started again on the same socket (at
// most Options.Restarts times). The signal that ends a job (Slurm's SIGTERM at scancel or
// at its time limit) reaches every process of the job's step, this service among them,
// while benchctl still needs it to stop the job's containers: their conmon outlives the
// service, and a container nobody stops runs on. DialContext waits for the service that is
// being started again.
type Service struct {
	// Host is the DOCKER_HOST value of its socket (unix:///…/podman.sock).
	Host string

	dir     string
	sock    string
	program string
	env     []string
	ready   time.Duration
	log     *slog.Logger
	stderr  *tailBuffer

	mu       sync.Mutex
	cmd      *exec.Cmd     // the service now running
	exited   chan struct{} // closed when cmd exits
	stopping bool          // Stop was called
	ended    bool          // no service runs and none will be started again
	changed  chan struct{} // closed (and replaced) when any of the above changes

	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the supervisor has ended
	once sync.Once
}

// Installed reports whether podman can be found (Options.Podman, else in PATH).
func Installed(podman string) bool {
	if podman == "" {
		podman = "podman"
	}
	_, err := exec.LookPath(podman)
	return err == nil
}

// Start starts the service and waits until its socket answers (or it exits, or ctx or the
// Ready bound ends: then it is stopped and the error says what it printed).
func Start(ctx context.Context, o Options) (*Service, error) {
	if o.Podman == "" {
		o.Podman = "podman"
	}
	program, err := exec.LookPath(o.Podman)
	if err != nil {
		return nil, fmt.Errorf("starting Podman's service: %w", err)
	}
	parent, err := privateParent(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("starting Podman's service: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "benchctl-podman-")
	if err != nil {
		return nil, fmt.Errorf("starting Podman's service: a private folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if o.Ready <= 0 {
		o.Ready = 30 * time.Second
	}
	if o.Restarts == 0 {
		o.Restarts = DefaultRestarts
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	sock := filepath.Join(dir, "podman.sock")
	s := &Service{Host: "unix://" + sock, dir: dir, sock: sock, program: program, ready: o.Ready, log: o.Log,
		env:    append(os.Environ(), fmt.Sprintf("%s=%s/%d", Marker, o.Job, o.Rank)),
		stderr: &tailBuffer{max: 8 << 10}, changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	started := make(chan error, 1)
	go s.supervise(max(o.Restarts, 0), started)
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting Podman's service (%s): %w", program, err)
	}
	rctx, cancel := context.WithTimeout(ctx, o.Ready)
	defer cancel()
	if err := s.waitReady(rctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// supervise starts the service, and starts it again when it ends unasked (restarts times
// at most), until Stop. The parent-death signal goes when the thread that started the
// child ends: the thread is held, locked, for as long as a service runs, so it is the
// process's death that sends it. The first start's error goes to started.
func (s *Service) supervise(restarts int, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(s.done)
	for n := 0; ; n++ {
		cmd := exec.Command(s.program, "system", "service", "--time=0", s.Host)
		cmd.Env = s.env
		cmd.Stdout, cmd.Stderr = s.stderr, s.stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		exited := make(chan struct{})
		// Started under the lock: Stop then ends either this service or none.
		s.mu.Lock()
		err := errStopped
		if !s.stopping {
			err = cmd.Start()
		}
		if err == nil {
			s.cmd, s.exited = cmd, exited
			go func() { _ = cmd.Wait(); close(exited) }()
		} else {
			s.ended = true
		}
		s.tell()
		s.mu.Unlock()
		if n == 0 {
			started <- err
		}
		if err != nil {
			if n > 0 && err != errStopped {
				s.log.Error("could not start Podman's service again", "socket", s.Host, "err", err)
			}
			return
		}
		select {
		case <-exited:
		case <-s.stop:
			<-exited // Stop ends it
		}
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping || n >= restarts {
			if !stopping {
				s.log.Error("Podman's service ended unasked, and was started again too often: not again; the job's containers may be left to benchctl cleanup",
					"socket", s.Host, "pid", cmd.Process.Pid, "state", cmd.ProcessState.String(), "said", s.said())
			}
			s.mu.Lock()
			s.ended = true
			s.tell()
			s.mu.Unlock()
			return
		}
		s.log.Warn("Podman's service ended unasked: starting it again, as the run still needs it (to stop the job's containers if nothing else)",
			"socket", s.Host, "pid", cmd.Process.Pid, "state", cmd.ProcessState.String())
		os.Remove(s.sock) // a socket file the service left would refuse the next one's listen
	}
}

// errStopped is a start that did not happen because Stop came first.
var errStopped = errors.New("stopped")

// tell wakes those who wait for a change of the service's state; s.mu is held.
func (s *Service) tell() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// DialContext connects to the service's socket (network and addr are the HTTP client's and
// are not used). A service that is not answering because it ended and is being started
// again is waited for (Options.Ready at most); one that was stopped, or will not be started
// again, is not.
func (s *Service) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	deadline := time.Now().Add(s.ready)
	for {
		c, err := d.DialContext(ctx, "unix", s.sock)
		if err == nil {
			return c, nil
		}
		s.mu.Lock()
		over, changed := s.stopping || s.ended, s.changed
		s.mu.Unlock()
		if over || time.Now().After(deadline) || !(errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// privateParent is the folder the service's private folder is made in: dir when given,
// else $XDG_RUNTIME_DIR, else the system's temporary folder; each taken only where no one
// else can rename or replace what is made in it (the engine's socket receives the
// containers' environment, secrets included): it belongs to this user or root, and others
// may not write it, unless it is sticky (as /tmp is).
func privateParent(dir string) (string, error) {
	var tried []string
	for _, d := range []string{dir, os.Getenv("XDG_RUNTIME_DIR"), os.TempDir()} {
		if d == "" {
			continue
		}
		why := safeParent(d)
		if why == "" {
			return d, nil
		}
		tried = append(tried, d+" ("+why+")")
		if d == dir {
			break // asked for by name: not replaced by another
		}
	}
	return "", fmt.Errorf("no folder to keep its socket in: %s", strings.Join(tried, ", "))
}

// safeParent says why d is not a safe place for a private folder ("": it is).
func safeParent(d string) string {
	fi, err := os.Stat(d)
	if err != nil {
		return err.Error()
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return "not a folder"
	}
	if uid := uint32(os.Getuid()); st.Uid != uid && st.Uid != 0 {
		return fmt.Sprintf("it belongs to uid %d", st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Sprintf("others may write it (mode %04o)", fi.Mode().Perm())
	}
	return ""
}

// waitReady asks the socket for /_ping until it answers, the service exits, or ctx ends.
func (s *Service) waitReady(ctx context.Context) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", s.sock)
	}}, Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://podman/_ping", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("the Podman service exited before it answered: %s", s.said())
		case <-ctx.Done():
			return fmt.Errorf("the Podman service did not answer on %s: %v; it said: %s", s.sock, ctx.Err(), s.said())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Service) said() string {
	if t := strings.TrimSpace(s.stderr.String()); t != "" {
		return t
	}
	return "nothing"
}

// Stop ends the service (SIGTERM to its group, SIGKILL after 10 s) and removes its folder;
// it is not started again. It may be called more than once.
func (s *Service) Stop() {
	s.once.Do(func() {
		s.mu.Lock()
		s.stopping = true
		cmd, exited := s.cmd, s.exited
		s.mu.Unlock()
		close(s.stop)
		if cmd != nil {
			select {
			case <-exited: // ended unasked (and not started again, as stopping is set): its pid may be another's now
			default:
				_ = unix.Kill(-cmd.Process.Pid, unix.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
				}
			}
		}
		<-s.done
		os.RemoveAll(s.dir)
	})
}

// Pid is the process id of the service now running (0 when none).
func (s *Service) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil || s.ended {
		return 0
	}
	return s.cmd.Process.Pid
}

// EndLeft ends the services a crashed run of job left on this node, found by their
// marker among this user's processes; it returns how many it ended.
func EndLeft(job string) (int, error) {
	pids, err := proctable.Pids()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		v, ok := proctable.Getenv(pid, Marker)[Marker]
		if j, _, _ := strings.Cut(v, "/"); ok && j == job {
			if unix.Kill(-pid, unix.SIGTERM) == nil || unix.Kill(pid, unix.SIGTERM) == nil {
				n++ // its group (it leads one), or itself
			}
		}
	}
	return n, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

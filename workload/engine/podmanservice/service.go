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
	"fmt"
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
	// Ready bounds the wait for the socket to answer (30 s when zero).
	Ready time.Duration
}

// Service is a running `podman system service`.
type Service struct {
	// Host is the DOCKER_HOST value of its socket (unix:///…/podman.sock).
	Host string

	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *tailBuffer
	stop   chan struct{}
	once   sync.Once
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
	sock := filepath.Join(dir, "podman.sock")
	s := &Service{Host: "unix://" + sock, dir: dir, done: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}, stop: make(chan struct{})}
	started := make(chan error, 1)
	// The parent-death signal goes when the thread that started the child ends: the thread
	// is held, locked, until Stop, so it is the process's death that sends it.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(program, "system", "service", "--time=0", s.Host)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s/%d", Marker, o.Job, o.Rank))
		cmd.Stdout, cmd.Stderr = s.stderr, s.stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			started <- err
			close(s.done)
			return
		}
		s.cmd = cmd
		started <- nil
		go func() { _ = cmd.Wait(); close(s.done) }()
		select {
		case <-s.stop:
		case <-s.done:
		}
	}()
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting Podman's service (%s): %w", program, err)
	}
	ready := o.Ready
	if ready <= 0 {
		ready = 30 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, ready)
	defer cancel()
	if err := s.waitReady(rctx, sock); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
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
func (s *Service) waitReady(ctx context.Context, sock string) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}, Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://podman/_ping", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("the Podman service exited before it answered: %s", s.said())
		case <-ctx.Done():
			return fmt.Errorf("the Podman service did not answer on %s: %v; it said: %s", sock, ctx.Err(), s.said())
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

// Stop ends the service (SIGTERM to its group, SIGKILL after 10 s) and removes its folder.
// It may be called more than once.
func (s *Service) Stop() {
	s.once.Do(func() {
		if s.cmd != nil {
			_ = unix.Kill(-s.cmd.Process.Pid, unix.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(10 * time.Second):
				_ = unix.Kill(-s.cmd.Process.Pid, unix.SIGKILL)
				<-s.done
			}
		}
		close(s.stop)
		os.RemoveAll(s.dir)
	})
}

// Pid is the service's process id (0 when it did not start).
func (s *Service) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
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

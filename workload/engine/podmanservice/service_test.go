//go:build linux

package podmanservice

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/internal/proctable"
)

// The test binary is a stand-in podman (FAKE_PODMAN: serve answers /_ping on the socket it
// is given, exit fails at once, mute listens to nothing), and a benchctl that starts a
// service and is then killed (START_SERVICE).
func TestMain(m *testing.M) {
	if dir := os.Getenv("START_SERVICE"); dir != "" {
		os.Unsetenv("START_SERVICE") // the service is the stand-in podman, not another of these
		s, err := Start(context.Background(), Options{Podman: fakePodman(), Job: "crash", Rank: 1, Dir: dir})
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(s.Pid()) + "\n")
		time.Sleep(10 * time.Minute)
	}
	switch os.Getenv("FAKE_PODMAN") {
	case "serve":
		if d, err := time.ParseDuration(os.Getenv("FAKE_PODMAN_DELAY")); err == nil {
			time.Sleep(d) // a service slow to listen
		}
		sock := strings.TrimPrefix(os.Args[len(os.Args)-1], "unix://")
		l, err := net.Listen("unix", sock)
		if err != nil {
			os.Exit(2)
		}
		go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("OK")) }))
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		os.Exit(0)
	case "exit":
		os.Stderr.WriteString("Error: cannot set up the storage\n")
		os.Exit(125)
	case "mute":
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakePodman is a "podman" that is this test binary (FAKE_PODMAN says what it does).
func fakePodman() string {
	self, _ := os.Executable()
	return self
}

func start(t *testing.T, mode string, o Options) (*Service, error) {
	t.Helper()
	t.Setenv("FAKE_PODMAN", mode)
	o.Podman = fakePodman()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	return Start(context.Background(), o)
}

// alive reports whether pid is there and not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || len(b) < i+3 || b[i+2] != 'Z'
}

// waitGone waits until pid has exited, as its pidfd says (a minute at most: a bound on a
// hang, not on speed; a zombie waiting for its reaper counts).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(time.Minute.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the service %d was left running (%v)", pid, err)
		}
		return
	}
}

// A started service answers on a socket in a folder only this user reads, carries the
// job's marker, and Stop ends it and removes the folder.
func TestStartAndStop(t *testing.T) {
	s, err := start(t, "serve", Options{Job: "77", Rank: 2})
	if err != nil {
		t.Fatal(err)
	}
	sock := strings.TrimPrefix(s.Host, "unix://")
	fi, err := os.Stat(filepath.Dir(sock))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the socket's folder: %v %v", fi, err)
	}
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(s.Pid()) + "/environ")
	if !strings.Contains(string(env), Marker+"=77/2\x00") {
		t.Fatalf("no marker in the service's environment")
	}
	pid := s.Pid()
	s.Stop()
	s.Stop() // again: nothing
	waitGone(t, pid)
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Fatalf("the folder is left: %v", err)
	}
}

// A podman that cannot start its service: the error says what it printed; nothing is left.
func TestAServiceThatExits(t *testing.T) {
	dir := t.TempDir()
	_, err := start(t, "exit", Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "cannot set up the storage") {
		t.Fatalf("%v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// A service that never answers is stopped after the Ready bound, not left behind.
func TestAServiceThatNeverAnswers(t *testing.T) {
	dir := t.TempDir()
	_, err := start(t, "mute", Options{Dir: dir, Ready: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("%v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// A benchctl killed outright takes its service with it (the parent-death signal).
func TestTheServiceEndsWithACrashedBenchctl(t *testing.T) {
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "START_SERVICE="+t.TempDir(), "FAKE_PODMAN=serve")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		cmd.Process.Kill()
		t.Fatalf("no service pid: %q %v", line, err)
	}
	if !alive(pid) {
		t.Fatal("the service is not running")
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, pid)
}

// cleanup ends what a crash left of a job's services, and no other job's.
func TestEndLeft(t *testing.T) {
	mine, err := start(t, "serve", Options{Job: "left-" + strconv.Itoa(os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Stop()
	other, err := start(t, "serve", Options{Job: "other-" + strconv.Itoa(os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	n, err := EndLeft("left-" + strconv.Itoa(os.Getpid()))
	if err != nil || n != 1 {
		t.Fatalf("ended %d, %v", n, err)
	}
	waitGone(t, mine.Pid())
	if !alive(other.Pid()) {
		t.Fatal("another job's service was ended")
	}
}

// The socket's folder is made only where no one else can rename or replace it: an
// $XDG_RUNTIME_DIR that others may write is passed over for the system's temporary folder,
// and a folder asked for by name that others may write is an error.
func TestThePrivateFolderIsMadeWhereNoOneElseWrites(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", open)
	t.Setenv("TMPDIR", tmp)
	got, err := privateParent("")
	if err != nil || got != tmp {
		t.Fatalf("%q, %v; want %s", got, err, tmp)
	}
	if _, err := privateParent(open); err == nil || !strings.Contains(err.Error(), "others may write it (mode 0777)") {
		t.Fatalf("a folder others write, asked for by name: %v", err)
	}
	sticky := filepath.Join(t.TempDir(), "sticky")
	if err := os.Mkdir(sticky, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if got, err := privateParent(sticky); err != nil || got != sticky {
		t.Fatalf("a sticky folder: %q, %v", got, err)
	}
}

// ping asks the service for /_ping through its DialContext.
func ping(s *Service) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: s.DialContext, DisableKeepAlives: true}}
	resp, err := hc.Get("http://podman/_ping")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// The job's end signal reaches every process of a Slurm job step, the service among them,
// while the run still needs it to stop its containers: a service that ends unasked is
// started again on the same socket (its old socket file removed), with a warning, and a
// connection asked for at once waits for it instead of failing.
func TestAServiceEndedUnaskedIsStartedAgain(t *testing.T) {
	var log tailBuffer
	log.max = 1 << 16
	s, err := start(t, "serve", Options{Job: "9", Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	first := s.Pid()
	t.Setenv("FAKE_PODMAN_DELAY", "500ms")                        // the one started again listens late
	if err := syscall.Kill(-first, syscall.SIGTERM); err != nil { // as slurmstepd does
		t.Fatal(err)
	}
	waitGone(t, first)
	if err := ping(s); err != nil {
		t.Fatalf("a connection asked for while the service is started again: %v", err)
	}
	if again := s.Pid(); again == 0 || again == first {
		t.Fatalf("pid %d after the restart (first %d)", again, first)
	}
	if !strings.Contains(log.String(), "ended unasked: starting it again") {
		t.Errorf("no warning:\n%s", log.String())
	}
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(s.Pid()) + "/environ")
	if !strings.Contains(string(env), Marker+"=9/0\x00") {
		t.Errorf("the service started again has no marker")
	}
	pid := s.Pid()
	s.Stop()
	waitGone(t, pid)
}

// Restarts are bounded: past them the service is left ended, said so, and a connection
// fails at once rather than waiting; Stop then ends nothing and returns.
func TestRestartsAreBounded(t *testing.T) {
	var log tailBuffer
	log.max = 1 << 16
	s, err := start(t, "serve", Options{Restarts: 1, Ready: time.Minute, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		pid := s.Pid()
		if pid == 0 {
			t.Fatal("no service")
		}
		syscall.Kill(-pid, syscall.SIGKILL)
		waitGone(t, pid)
		if err := ping(s); err != nil && s.Pid() != 0 {
			t.Fatalf("ping while a service runs: %v", err)
		}
	}
	<-s.done
	if s.Pid() != 0 {
		t.Fatalf("pid %d after the last restart", s.Pid())
	}
	start := time.Now()
	if err := ping(s); err == nil {
		t.Fatal("a service past its restarts answered")
	} else if time.Since(start) > 30*time.Second {
		t.Fatalf("a connection to an ended service waited %v", time.Since(start))
	}
	if !strings.Contains(log.String(), "started again too often") {
		t.Errorf("no error said so:\n%s", log.String())
	}
	s.Stop()
}

// Stop at any moment of a restart ends the service that runs, or prevents the next one:
// it returns, and no service is left.
func TestStopDuringARestart(t *testing.T) {
	for i := range 6 {
		s, err := start(t, "serve", Options{Job: fmt.Sprintf("stop%d", i), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		syscall.Kill(-s.Pid(), syscall.SIGTERM)
		if i%2 == 1 {
			runtime.Gosched()
		}
		s.Stop()
		if s.Pid() != 0 {
			t.Fatalf("pid %d after Stop", s.Pid())
		}
		pids, _ := proctable.Pids()
		for _, pid := range pids {
			if v := proctable.Getenv(pid, Marker)[Marker]; v == fmt.Sprintf("stop%d/0", i) {
				waitGone(t, pid)
			}
		}
	}
}

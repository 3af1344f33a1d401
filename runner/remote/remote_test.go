package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benchctl/benchctl/internal/agentwire"
	"github.com/benchctl/benchctl/jobchan"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/process"
)

var agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agent-test-")
	if err != nil {
		panic(err)
	}
	agentBin = filepath.Join(dir, AgentName)
	cmd := exec.Command("go", "build", "-o", agentBin, "github.com/benchctl/benchctl/cmd/benchctl-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the agent: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuf is a log that several goroutines write.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// job is three nodes of one job in this process, each with its service and a benchmark
// (the agent's wait, as a waiting node runs) in the process runtime: the real agent, the
// real runtime, the real links.
type job struct {
	svcs []*Service
	ids  []string
	rt   *process.Runtime
	sock string
	log  *syncBuf
	run  string
}

func startJob(t *testing.T, secret string) *job {
	t.Helper()
	rt, err := process.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &job{rt: rt, log: &syncBuf{}, run: "pingpong"}
	log := slog.New(slog.NewTextHandler(j.log, nil))
	hosts := []string{"n1", "n2.cluster", "n3"}
	peers := map[int]string{}
	dir := t.TempDir()
	for rank := range hosts {
		cfg := jobchan.Config{Job: "77.0", Rank: rank, World: 3, Hosts: hosts, Secret: []byte(secret),
			AddrOf: func(int) string { return "127.0.0.1" }}
		s, err := Start(Config{Chan: cfg, RT: rt, Agent: agentBin, Log: log.With("rank", rank)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		j.svcs = append(j.svcs, s)
		peers[rank] = s.Addr()
		ctx := context.Background()
		id, err := rt.Create(ctx, workload.Spec{Name: fmt.Sprintf("b-%d-%s", rank, t.Name()), Command: []string{agentBin, "wait"}, Workdir: dir,
			Env: []string{"PATH=/usr/bin:/bin", "NODE=" + hosts[rank]}, Labels: map[string]string{"test": t.Name()}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx, id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Remove(context.Background(), id) })
		j.ids = append(j.ids, id)
		s.Running(j.run, id)
	}
	delete(peers, 0)
	j.svcs[0].SetPeers(peers)
	j.sock = filepath.Join(t.TempDir(), agentwire.SocketName)
	if err := j.svcs[0].ServeAgent(j.sock); err != nil {
		t.Fatal(err)
	}
	j.svcs[0].Launching(j.run, 3)
	return j
}

// call is the agent as a launcher calls it: its own process, its socket and token from
// the environment.
func (j *job) call(t *testing.T, token, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(agentBin, args...)
	cmd.Env = []string{agentwire.EnvSocket + "=" + j.sock, agentwire.EnvToken + "=" + token}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// A command runs on the node the launcher names, beside its benchmark (its environment),
// with stdin, stdout, stderr and the exit status relayed; words are read as sshd reads
// them (joined, by a shell): quotes and ';' as Open MPI writes them.
func TestCommandOnAnotherNode(t *testing.T) {
	j := startJob(t, "s3cret")
	tok := Token([]byte("s3cret"), "77.0")
	code, out, errb := j.call(t, tok, "", "-x", "n2", "echo", `"on $NODE;"`, ";", "echo", "err", ">&2", ";", "exit", "3")
	if code != 3 || out != "on n2.cluster;\n" || errb != "err\n" {
		t.Errorf("code %d out %q err %q", code, out, errb)
	}
	// stdin through, to its end; 1 MiB of output back whole.
	code, out, _ = j.call(t, tok, "from rank 0's launcher", "n3", "cat")
	if code != 0 || out != "from rank 0's launcher" {
		t.Errorf("stdin: %d %q", code, out)
	}
	code, out, _ = j.call(t, tok, "", "n3", "head", "-c", "1048576", "/dev/zero")
	if code != 0 || len(out) != 1<<20 {
		t.Errorf("1 MiB: %d %d", code, len(out))
	}
	// Rank 0's own node: run there, no link.
	if code, out, _ = j.call(t, tok, "", "n1", "echo", "$NODE"); code != 0 || out != "n1\n" {
		t.Errorf("own node: %d %q", code, out)
	}
}

// Refusals: a host not in the job, a token that is not the job's (another job's agent,
// or none), a node outside the run, a command after the run ended; each said to the
// agent (exit 255, as ssh's failed connection) and logged.
func TestRefusals(t *testing.T) {
	j := startJob(t, "s3cret")
	tok := Token([]byte("s3cret"), "77.0")
	for _, c := range []struct {
		token string
		args  []string
		want  string
	}{
		{tok, []string{"n9", "true"}, "host n9 is not a node of this job (n1, n2.cluster, n3)"},
		{tok, []string{"10.0.0.2", "true"}, "host 10.0.0.2 is not a node of this job"},
		{Token([]byte("s3cret"), "78.0"), []string{"n2", "true"}, "the request's token is not this job's"},
		{Token([]byte("another"), "77.0"), []string{"n2", "true"}, "the request's token is not this job's"},
		{"", []string{"n2", "true"}, "the request's token is not this job's"},
	} {
		code, _, errb := j.call(t, c.token, "", c.args...)
		if code != agentwire.ExitTransport || !strings.Contains(errb, c.want) {
			t.Errorf("%v: %d %q, want %q", c.args, code, errb, c.want)
		}
		if !strings.Contains(j.log.String(), c.want) {
			t.Errorf("%v: not logged: %s", c.args, j.log.String())
		}
	}
	j.svcs[0].Launching(j.run, 2) // a variant of 2 nodes: n3 is not in it
	if code, _, errb := j.call(t, tok, "", "n3", "true"); code != agentwire.ExitTransport || !strings.Contains(errb, "host n3 (rank 2) is not one of this run's 2 nodes") {
		t.Errorf("outside the run: %d %q", code, errb)
	}
	j.svcs[2].Done(j.run)
	j.svcs[0].Launching(j.run, 3)
	if code, _, errb := j.call(t, tok, "", "n3", "true"); code != agentwire.ExitTransport || !strings.Contains(errb, "n3's benchmark pingpong has ended here") {
		t.Errorf("after the end: %d %q", code, errb)
	}
	// Garbage on the socket, and a 6,000-character host: refused, nothing breaks.
	nc, err := net.Dial("unix", j.sock)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	io.Copy(io.Discard, nc)
	nc.Close()
	if code, _, errb := j.call(t, tok, "", strings.Repeat("h", 6000), "true"); code != agentwire.ExitTransport || !strings.Contains(errb, "is not a node of this job") || len(errb) > 1000 {
		t.Errorf("long host: %d %d bytes", code, len(errb))
	}
	// Cut where a character starts: the message stays valid text.
	if code, _, errb := j.call(t, tok, "", strings.Repeat("é", 3000), "true"); code != agentwire.ExitTransport || !utf8.ValidString(errb) || len(errb) > 1000 {
		t.Errorf("long host of two-byte letters: %d %q", code, errb)
	}
}

// Only rank 0 may ask a node for a command, and only with the job's secret.
func TestLinksNeedTheJobAndRankZero(t *testing.T) {
	j := startJob(t, "s3cret")
	cfg := jobchan.Config{Job: "77.0", Rank: 0, World: 3, Hosts: []string{"n1", "n2", "n3"}, Secret: []byte("wrong")}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := jobchan.DialStream(ctx, cfg, 1, j.svcs[1].Addr()); err == nil || !strings.Contains(err.Error(), "does not hold this job's secret") {
		t.Errorf("wrong secret: %v", err)
	}
	cfg.Secret, cfg.Job = []byte("s3cret"), "78.0"
	if _, _, err := jobchan.DialStream(ctx, cfg, 1, j.svcs[1].Addr()); err == nil {
		t.Error("another job's link was accepted")
	}
	cfg.Job, cfg.Rank = "77.0", 2
	c, nc, err := jobchan.DialStream(ctx, cfg, 1, j.svcs[1].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c.Send(agentwire.KindOpen, []byte(`{"run":"pingpong","words":["true"]}`))
	if k, p, err := c.Recv(); k != agentwire.KindRefuse || !strings.Contains(string(p), "only rank 0 runs the launcher") {
		t.Errorf("rank 2 asked: %c %q %v", k, p, err)
	}
	// A silent dialer does not hold the others up.
	silent, err := net.Dial("tcp", j.svcs[1].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if code, out, _ := j.call(t, Token([]byte("s3cret"), "77.0"), "", "n2", "echo", "ok"); code != 0 || out != "ok\n" {
		t.Errorf("beside a silent dialer: %d %q", code, out)
	}
}

// Killing either end ends the other: the agent killed ends the remote command (its whole
// process group); the remote command killed ends the agent with its status.
func TestKillingEitherEnd(t *testing.T) {
	j := startJob(t, "s3cret")
	tok := Token([]byte("s3cret"), "77.0")
	marker := fmt.Sprintf("benchctl-remote-test-%d", time.Now().UnixNano())
	cmd := exec.Command(agentBin, "n2", "sh", "-c", `'echo started; sleep 300 & sleep 301; : `+marker+`'`)
	cmd.Env = []string{agentwire.EnvSocket + "=" + j.sock, agentwire.EnvToken + "=" + tok}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 8)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "started\n" {
		t.Fatalf("%q %v", line, err)
	}
	if n := countProcs(marker); n == 0 {
		t.Fatal("the remote command is not running")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for countProcs(marker) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := countProcs(marker); n > 0 {
		t.Errorf("%d processes of the remote command outlived the agent", n)
	}
	// The other way: the remote command killed.
	done := make(chan int, 1)
	go func() {
		code, _, _ := j.call(t, tok, "", "n3", "exec", "sleep", "302")
		done <- code
	}()
	deadline = time.Now().Add(10 * time.Second)
	for pkill("sleep 302") == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case code := <-done:
		if code != 128+9 {
			t.Errorf("the agent of a killed command: %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Error("the agent did not end with its command")
	}
	// SIGTERM to the agent: the command ends, the agent says so (128+15).
	cmd = exec.Command(agentBin, "n2", "exec", "sleep", "303")
	cmd.Env = []string{agentwire.EnvSocket + "=" + j.sock, agentwire.EnvToken + "=" + tok}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for countProcs("sleep 303") == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+15 {
		t.Errorf("SIGTERM: %v", err)
	}
	if n := countProcs("sleep 303"); n > 0 {
		t.Errorf("the command outlived the agent's SIGTERM")
	}
}

// EndRun ends the waiting nodes' benchmarks: their agent's wait exits 0.
func TestEndRunEndsTheWaitingNodes(t *testing.T) {
	j := startJob(t, "s3cret")
	waits := []<-chan workload.Exit{j.rt.Wait(context.Background(), j.ids[1]), j.rt.Wait(context.Background(), j.ids[2])}
	for _, id := range j.ids[1:] { // the waits have set up their signals (a SIGTERM before that kills: EndedByLauncher)
		catchesTERM(t, j.rt, id)
	}
	if err := j.svcs[0].EndRun(context.Background(), j.run, 3); err != nil {
		t.Fatal(err)
	}
	for i, w := range waits {
		select {
		case e := <-w:
			if e.Code != 0 || e.Err != nil {
				t.Errorf("rank %d: %+v", i+1, e)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("rank %d still waits", i+1)
		}
	}
	// A node told before its benchmark starts ends it as soon as it starts.
	j.svcs[0].SetPeers(map[int]string{1: j.svcs[1].Addr()})
	if err := j.svcs[0].EndRun(context.Background(), "next", 2); err != nil {
		t.Fatal(err)
	}
	id, _ := j.rt.Create(context.Background(), workload.Spec{Name: "late-" + t.Name(), Command: []string{agentBin, "wait"}, Workdir: t.TempDir(), Env: []string{"PATH=/bin"}})
	w := j.rt.Wait(context.Background(), id)
	j.rt.Start(context.Background(), id)
	defer j.rt.Remove(context.Background(), id)
	j.svcs[1].Running("next", id)
	select {
	case e := <-w:
		if e.Err != nil || !j.svcs[1].EndedByLauncher("next") {
			t.Errorf("late: %+v", e)
		}
	case <-time.After(15 * time.Second):
		t.Error("a benchmark that started after its end still waits")
	}
}

func countProcs(s string) int { return procs(s, false) }
func pkill(s string) int      { return procs(s, true) }

// procs counts (and kills) the processes whose command line starts with s, or, for a
// marker (no blank), holds it.

func procs(s string, kill bool) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		line := strings.ReplaceAll(string(b), "\x00", " ")
		if err != nil || !strings.Contains(s, " ") && !strings.Contains(line, s) || strings.Contains(s, " ") && !strings.HasPrefix(line, s) {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(st), ") Z ") {
			continue // a zombie is ended, waiting for its parent
		}
		n++
		if kill {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return n
}

// A launcher whose program is not on the node's PATH (the process runtime) is refused
// before the job starts, as an input error naming what was looked for.
func TestCheckLauncherOnThePath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	err := CheckLauncher(context.Background(), nil, "", "", "mpiexec", nil)
	if err == nil || !strings.Contains(err.Error(), "none of mpiexec.hydra, mpiexec.mpich, mpiexec is on this node's PATH ("+dir+"): install MPICH or Intel MPI") {
		t.Errorf("no launcher: %v", err)
	}
	if ie, ok := err.(interface{ InvalidInput() bool }); !ok || !ie.InvalidInput() {
		t.Errorf("not an input error: %T", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mpiexec.mpich"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckLauncher(context.Background(), nil, "", "", "mpiexec", nil); err != nil {
		t.Errorf("with mpiexec.mpich: %v", err)
	}
	if err := CheckLauncher(context.Background(), struct{}{}, "img", "img", "mpirun", nil); err != nil {
		t.Errorf("an engine that cannot be asked decides nothing: %v", err)
	}
}

// A $TMPDIR too long for a Unix socket's path gives way to /tmp: the socket is made.
func TestAgentFolderUnderALongTMPDIR(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	dir, err := AgentFolder(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if !strings.HasPrefix(dir, "/tmp/benchctl-agent-") {
		t.Errorf("folder %s", dir)
	}
	rt, _ := process.New(t.TempDir())
	s, err := Start(Config{Chan: jobchan.Config{Job: "1.0", World: 2, Hosts: []string{"a", "b"}, Secret: []byte("x")}, RT: rt, Agent: agentBin, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ServeAgent(filepath.Join(dir, agentwire.SocketName)); err != nil {
		t.Error(err)
	}
	if st, err := os.Stat(filepath.Join(dir, AgentName)); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("the agent placed: %v %v", st, err)
	}
}

// A caller of the agent's socket that says nothing, and a link that goes silent after it
// proved itself, do not hold the service's Close.
func TestSilentCallersDoNotHoldClose(t *testing.T) {
	j := startJob(t, "s3cret")
	nc, err := net.Dial("unix", j.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cfg := jobchan.Config{Job: "77.0", Rank: 0, World: 3, Hosts: []string{"n1", "n2", "n3"}, Secret: []byte("s3cret")}
	_, link, err := jobchan.DialStream(context.Background(), cfg, 1, j.svcs[1].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	// Served in order: a call that went through after them means both are being served.
	if code, _, _ := j.call(t, Token([]byte("s3cret"), "77.0"), "", "n2", "true"); code != 0 {
		t.Fatalf("a call beside the silent ones: %d", code)
	}
	done := make(chan struct{})
	go func() {
		j.svcs[0].Close()
		j.svcs[1].Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a silent caller")
	}
}

// The agent named by $BENCHCTL_AGENT must be a file: none, a folder or a FIFO is an
// error that says how to fix it (never a copy that waits for a FIFO's writer).
func TestAgentBinary(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "none"), dir, fifo} {
		t.Setenv(EnvAgent, p)
		if _, err := AgentBinary(); err == nil || !strings.Contains(err.Error(), "install benchctl-agent beside benchctl") {
			t.Errorf("%s: %v", p, err)
		}
	}
	t.Setenv(EnvAgent, agentBin)
	if p, err := AgentBinary(); err != nil || p != agentBin {
		t.Errorf("%q %v", p, err)
	}
}

// catchesTERM waits until process id's agent wait has said it catches SIGTERM (its
// WaitingLine in the log), 30 s at most: the event the wait's exit 0 depends on. (The
// kernel's SigCgt cannot say it: Go's runtime catches SIGTERM from its start, to die of it.)
func catchesTERM(t *testing.T, rt *process.Runtime, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &lineWatch{want: agentwire.WaitingLine, seen: cancel}
	_ = rt.Logs(ctx, id, w)
	if !w.found() {
		t.Fatalf("%s never said it waits; its log:\n%s", id, w.buf.String())
	}
}

// lineWatch is a writer that calls seen once what it was written holds want.
type lineWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen func()
	hit  bool
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.hit && strings.Contains(w.buf.String(), w.want) {
		w.hit = true
		w.seen()
	}
	return len(p), nil
}

func (w *lineWatch) found() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.hit }

// Package remote is a node's part of the remote launch of an MPI job (launcher mpirun or
// mpiexec): no sshd, no keys. Rank 0's launcher calls benchctl's agent as it would call
// ssh; the agent asks rank 0's benchctl through a Unix socket only its benchmark can reach
// (Service.ServeAgent), with the job's token; rank 0's benchctl checks the host is one of
// the run's nodes and has that node's benchctl (over an authenticated link of the job
// channel: jobchan.DialStream) start the command beside its benchmark (Runtime.Exec of the
// agent's wrapper, which ends the command when the link ends), relaying stdin, stdout,
// stderr, signals and the exit status. Every refusal is logged.
package remote

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/agentwire"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobchan"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
	"github.com/benchctl/benchctl/runner/launch"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

// AgentDir is where a container sees the agent and its node's socket (mounted read-only).
const AgentDir = "/run/benchctl-agent"

// AgentName is the agent's file name in its folder.
const AgentName = "benchctl-agent"

// StartWait bounds how long a node waits for its benchmark to start before it refuses a
// command for it (its nodes start their benchmarks together, give or take an engine's
// create).
var StartWait = 2 * time.Minute

// Token is the agent's token of a job: from the job's secret, so that every node knows it
// and nothing else does.
func Token(secret []byte, job string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("benchctl agent token\x00" + job))
	return hex.EncodeToString(m.Sum(nil))
}

// Config is a node's remote-launch service.
type Config struct {
	Chan jobchan.Config // the job channel's: job, rank, world, hosts, secret, ports
	RT   workload.Runtime
	// Agent is the agent's path where this node's benchmark runs (AgentDir/AgentName in a
	// container; the host path for the process runtime).
	Agent string
	Log   *slog.Logger
}

// Service is a node's remote-launch service for a job.
type Service struct {
	cfg   Config
	token string
	srv   *jobchan.StreamServer

	mu    sync.Mutex
	cur   map[string]string // run -> the running benchmark's id
	ended map[string]bool
	// byLauncher are the runs rank 0 ended here.
	byLauncher map[string]bool
	changed    chan struct{}
	peers      map[int]string // rank -> its stream address (rank 0)
	run        string         // rank 0: the run its launcher is in
	ranks      int            // rank 0: the run's nodes (ranks 0..ranks-1)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	agent  net.Listener
}

// Start starts the node's service: it listens for the job's remote-launch links.
func Start(cfg Config) (*Service, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{cfg: cfg, token: Token(cfg.Chan.Secret, cfg.Chan.Job), cur: map[string]string{}, ended: map[string]bool{}, byLauncher: map[string]bool{},
		changed: make(chan struct{}), ctx: ctx, cancel: cancel}
	srv, err := jobchan.ListenStreams(cfg.Chan, s.serveLink)
	if err != nil {
		cancel()
		return nil, err
	}
	s.srv = srv
	return s, nil
}

// Addr is where other nodes reach this one's service.
func (s *Service) Addr() string { return s.srv.Addr }

// TokenValue is the job's agent token (for the benchmark's environment).
func (s *Service) TokenValue() string { return s.token }

// SetPeers tells rank 0 where each rank's service is.
func (s *Service) SetPeers(addrs map[int]string) {
	s.mu.Lock()
	s.peers = addrs
	s.mu.Unlock()
}

// Running says that run's benchmark runs here as process id: commands for it may start.
func (s *Service) Running(run, id string) {
	s.mu.Lock()
	s.cur[run] = id
	ended := s.ended[run]
	s.notify()
	s.mu.Unlock()
	if ended {
		s.stop(run, id)
	}
}

// Done says that run's benchmark has ended here.
func (s *Service) Done(run string) {
	s.mu.Lock()
	delete(s.cur, run)
	s.ended[run] = true
	s.notify()
	s.mu.Unlock()
}

// EndedByLauncher says rank 0 ended run here (its launcher is done): a waiting node's
// benchmark that ends then has done its part, whatever its exit (a SIGTERM that came
// before the wait could catch it).
func (s *Service) EndedByLauncher(run string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byLauncher[run]
}

// Launching says that rank 0's launcher is about to run in run, across ranks 0..ranks-1.
func (s *Service) Launching(run string, ranks int) {
	s.mu.Lock()
	s.run, s.ranks = run, ranks
	s.mu.Unlock()
}

func (s *Service) notify() { close(s.changed); s.changed = make(chan struct{}) }

// stop ends a waiting node's benchmark: rank 0's launcher is done.
func (s *Service) stop(run, id string) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if err := s.cfg.RT.Stop(ctx, id, 5*time.Second); err != nil {
		s.cfg.Log.Warn("remote launch: could not end the waiting benchmark", "run", run, "err", err)
	}
}

// Close ends the service: no more links, the agent's socket closed, the commands it runs
// cut (their wrappers end them).
func (s *Service) Close() {
	s.cancel()
	_ = s.srv.Close()
	if s.agent != nil {
		_ = s.agent.Close()
	}
	s.wg.Wait()
}

// ServeAgent listens on the agent's socket at sock (rank 0): the agent of its benchmark
// asks there for commands on the run's nodes.
func (s *Service) ServeAgent(sock string) error {
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("remote launch: the agent's socket: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil { // the benchmark's user, whoever it is; the token decides
		ln.Close()
		return err
	}
	s.agent = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
					return
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				stop := context.AfterFunc(s.ctx, func() { nc.Close() }) // a silent caller does not hold Close
				defer stop()
				s.serveAgent(agentwire.NewConn(nc, nc))
			}()
		}
	}()
	return nil
}

// refuse answers a request with why, and logs it.
func (s *Service) refuse(c *agentwire.Conn, why string, args ...any) {
	s.cfg.Log.Warn("remote launch: refused: "+why, args...)
	_ = c.Send(agentwire.KindRefuse, []byte(why))
}

// serveAgent is one agent's call: checked, then run where it asks.
func (s *Service) serveAgent(c *agentwire.Conn) {
	kind, p, err := c.Recv()
	if err != nil || kind != agentwire.KindOpen {
		s.cfg.Log.Warn("remote launch: refused a caller of the agent's socket that is not benchctl's agent", "err", err)
		return
	}
	var o agentwire.Open
	if err := json.Unmarshal(p, &o); err != nil {
		s.refuse(c, "a request that is not the agent's")
		return
	}
	if subtle.ConstantTimeCompare([]byte(o.Token), []byte(s.token)) != 1 {
		s.refuse(c, "the request's token is not this job's (an agent of another job, or not benchctl's)", "host", document.Clip(o.Host))
		return
	}
	if len(o.Words) == 0 || len(o.Words) > agentwire.MaxWords {
		s.refuse(c, fmt.Sprintf("a command of %d words (1 to %d)", len(o.Words), agentwire.MaxWords))
		return
	}
	s.mu.Lock()
	run, ranks, peers := s.run, s.ranks, s.peers
	s.mu.Unlock()
	rank := RankOf(o.Host, s.cfg.Chan.Hosts)
	switch {
	case rank < 0:
		s.refuse(c, fmt.Sprintf("host %s is not a node of this job (%s)", document.Clip(o.Host), strings.Join(s.cfg.Chan.Hosts, ", ")), "host", document.Clip(o.Host))
		return
	case run == "":
		s.refuse(c, "no MPI launcher runs on this node now")
		return
	case rank >= ranks:
		s.refuse(c, fmt.Sprintf("host %s (rank %d) is not one of this run's %d nodes", document.Clip(o.Host), rank, ranks), "host", document.Clip(o.Host))
		return
	}
	s.cfg.Log.Info("remote launch", "host", o.Host, "rank", rank, "run", run, "command", document.Clip(strings.Join(o.Words, " ")))
	req := agentwire.Remote{Run: run, Words: o.Words}
	if rank == s.cfg.Chan.Rank {
		s.execute(c, req)
		return
	}
	addr := peers[rank]
	if addr == "" {
		s.refuse(c, fmt.Sprintf("rank %d (%s) published no remote-launch address", rank, o.Host))
		return
	}
	s.relay(c, rank, addr, req)
}

// relay carries one agent's call to rank's node and back.
func (s *Service) relay(agent *agentwire.Conn, rank int, addr string, req agentwire.Remote) {
	dctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	link, nc, err := jobchan.DialStream(dctx, s.cfg.Chan, rank, addr)
	cancel()
	if err != nil {
		s.refuse(agent, err.Error())
		return
	}
	defer nc.Close()
	stop := context.AfterFunc(s.ctx, func() { nc.Close() })
	defer stop()
	b, _ := json.Marshal(req)
	if err := link.Send(agentwire.KindOpen, b); err != nil {
		s.refuse(agent, fmt.Sprintf("rank %d: %v", rank, err))
		return
	}
	// agent -> target: stdin, its end, signals; the agent gone ends the link (and so the command).
	go func() {
		for {
			kind, p, err := agent.Recv()
			if err != nil {
				nc.Close()
				return
			}
			switch kind {
			case agentwire.KindStdin, agentwire.KindStdinEOF, agentwire.KindSignal:
				if link.Send(kind, p) != nil {
					return
				}
			}
		}
	}()
	for {
		kind, p, err := link.Recv()
		if err != nil {
			_ = agent.Send(agentwire.KindStderr, []byte(fmt.Sprintf("benchctl-agent: lost the link to rank %d (%s): %v\n", rank, s.cfg.Chan.Hosts[rank], err)))
			_ = agent.Send(agentwire.KindExit, agentwire.Exit(agentwire.ExitTransport))
			return
		}
		switch kind {
		case agentwire.KindStdout, agentwire.KindStderr, agentwire.KindRefuse:
			if agent.Send(kind, p) != nil {
				return
			}
			if kind == agentwire.KindRefuse {
				return
			}
		case agentwire.KindExit:
			_ = agent.Send(kind, p)
			return
		}
	}
}

// serveLink is one authenticated link from another rank: a command to run, or a run's end.
func (s *Service) serveLink(from int, c *agentwire.Conn, nc net.Conn) {
	defer nc.Close()
	stop := context.AfterFunc(s.ctx, func() { nc.Close() })
	defer stop()
	if from != 0 {
		s.refuse(c, fmt.Sprintf("rank %d asked for a remote launch; only rank 0 runs the launcher", from))
		return
	}
	kind, p, err := c.Recv()
	if err != nil {
		return
	}
	switch kind {
	case agentwire.KindEnd:
		run := string(p)
		s.mu.Lock()
		id := s.cur[run]
		s.ended[run], s.byLauncher[run] = true, true
		s.notify()
		s.mu.Unlock()
		if id != "" {
			s.stop(run, id)
		}
		_ = c.Send(agentwire.KindOK, nil)
	case agentwire.KindOpen:
		var req agentwire.Remote
		if err := json.Unmarshal(p, &req); err != nil || len(req.Words) == 0 || len(req.Words) > agentwire.MaxWords {
			s.refuse(c, "a request that is not rank 0's benchctl's")
			return
		}
		s.execute(c, req)
	default:
		s.refuse(c, "not a request")
	}
}

// execute runs req's command beside this node's benchmark of req.Run, through the agent's
// wrapper, fed by c's frames; its output and exit status go back on c.
func (s *Service) execute(c *agentwire.Conn, req agentwire.Remote) {
	id, err := s.waitRunning(req.Run)
	if err != nil {
		s.refuse(c, err.Error(), "run", req.Run)
		return
	}
	// An OS pipe, not an io.Pipe: a process runtime hands it to the wrapper as it is, and
	// never waits for a copy of it to end after the command has.
	pr, pw, err := os.Pipe()
	if err != nil {
		s.refuse(c, err.Error())
		return
	}
	defer pr.Close()
	in := agentwire.NewConn(nil, pw) // frames for the wrapper's stdin
	go func() {
		for {
			kind, p, err := c.Recv()
			if err != nil {
				pw.Close() // the link is lost: the wrapper ends the command
				return
			}
			switch kind {
			case agentwire.KindStdin, agentwire.KindStdinEOF, agentwire.KindSignal:
				if in.Send(kind, p) != nil {
					return
				}
			}
		}
	}()
	argv := []string{s.cfg.Agent, "run", "--", "/bin/sh", "-c", strings.Join(req.Words, " ")}
	code, err := s.cfg.RT.Exec(s.ctx, id, workload.Command{Argv: argv, Stdin: pr,
		Stdout: agentwire.Writer{C: c, Kind: agentwire.KindStdout}, Stderr: agentwire.Writer{C: c, Kind: agentwire.KindStderr}})
	pw.Close()
	if err != nil {
		_ = c.Send(agentwire.KindStderr, []byte(fmt.Sprintf("benchctl-agent: rank %d (%s): %v\n", s.cfg.Chan.Rank, s.cfg.Chan.Hosts[s.cfg.Chan.Rank], err)))
		code = agentwire.ExitTransport
	}
	_ = c.Send(agentwire.KindExit, agentwire.Exit(code))
}

// waitRunning waits until run's benchmark runs here (StartWait at most).
func (s *Service) waitRunning(run string) (string, error) {
	t := time.NewTimer(StartWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		id, ended, ch := s.cur[run], s.ended[run], s.changed
		s.mu.Unlock()
		switch {
		case id != "":
			return id, nil
		case ended:
			return "", fmt.Errorf("%s's benchmark %s has ended here", s.cfg.Chan.Hosts[s.cfg.Chan.Rank], run)
		}
		select {
		case <-ch:
		case <-t.C:
			return "", fmt.Errorf("%s's benchmark %s did not start within %s", s.cfg.Chan.Hosts[s.cfg.Chan.Rank], run, StartWait)
		case <-s.ctx.Done():
			return "", errors.New("the node's run is ending")
		}
	}
}

// EndRun tells ranks 1..ranks-1 that rank 0's launcher in run has ended: their waiting
// benchmarks end. It waits for their answers (bounded) and says which did not answer.
func (s *Service) EndRun(ctx context.Context, run string, ranks int) error {
	s.mu.Lock()
	peers := s.peers
	if s.run == run {
		s.run = ""
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for r := 1; r < ranks; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.endOn(ctx, r, peers[r], run)
			if err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("rank %d: %v", r, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		return fmt.Errorf("remote launch: could not end the waiting nodes' benchmarks: %s", strings.Join(failed, "; "))
	}
	return nil
}

func (s *Service) endOn(ctx context.Context, rank int, addr, run string) error {
	if addr == "" {
		return errors.New("no address")
	}
	c, nc, err := jobchan.DialStream(ctx, s.cfg.Chan, rank, addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if err := c.Send(agentwire.KindEnd, []byte(run)); err != nil {
		return err
	}
	kind, p, err := c.Recv()
	if err != nil {
		return err
	}
	if kind == agentwire.KindRefuse {
		return errors.New(document.Clip(string(p)))
	}
	return nil
}

// RankOf is the rank of host among hosts: its name, or the first label of it (n1 for
// n1.cluster, as launchers shorten names); -1 when none.
func RankOf(host string, hosts []string) int {
	for i, h := range hosts {
		if h == host {
			return i
		}
	}
	short := func(h string) string { s, _, _ := strings.Cut(h, "."); return s }
	if net.ParseIP(host) == nil {
		for i, h := range hosts {
			if net.ParseIP(h) == nil && short(h) == short(host) {
				return i
			}
		}
	}
	return -1
}

// AgentFolder makes a node-local folder for the agent and its socket: mounted read-only
// in the benchmark's container, traversable but not listable by others (the token
// decides who is served).
func AgentFolder(agent string) (dir string, err error) {
	dir, err = os.MkdirTemp("", "benchctl-agent-")
	if err == nil && len(filepath.Join(dir, agentwire.SocketName)) > 100 {
		// A Unix socket's path has at most 107 bytes: a long $TMPDIR gives way to /tmp.
		os.RemoveAll(dir)
		dir, err = os.MkdirTemp("/tmp", "benchctl-agent-")
	}
	if err != nil {
		return "", err
	}
	if err = os.Chmod(dir, 0o711); err == nil {
		err = copyFile(agent, filepath.Join(dir, AgentName))
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("placing the agent: %w", err)
	}
	return dir, nil
}

func copyFile(from, to string) error {
	in, err := safefile.Open(from) // a regular file; never blocks on a FIFO
	if err != nil {
		return err
	}
	defer in.Close()
	return safefile.CopyNew(in, to, 0o755, 64<<20)
}

// EnvAgent names the agent's binary (default: benchctl-agent beside benchctl).
const EnvAgent = "BENCHCTL_AGENT"

// AgentPath is where a benchmark finds the agent: in a container, AgentDir's (the node's
// folder, dir, is mounted there); a process, in dir itself.
func AgentPath(process bool, dir string) string {
	if process {
		return filepath.Join(dir, AgentName)
	}
	return AgentDir + "/" + AgentName
}

// AgentBinary is the agent benchctl places for an MPI launcher.
func AgentBinary() (string, error) {
	p := os.Getenv(EnvAgent)
	if p == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		p = filepath.Join(filepath.Dir(exe), AgentName)
	}
	st, err := os.Stat(p)
	if err == nil && !st.Mode().IsRegular() { // a FIFO would hold the copy for ever
		err = fmt.Errorf("%s is not a regular file (%s)", p, st.Mode().Type())
	}
	if err != nil {
		return "", fmt.Errorf("the MPI launchers need benchctl's agent, and %v: install benchctl-agent beside benchctl (make build puts both in bin/) or name it in $%s", err, EnvAgent)
	}
	return p, nil
}

// SharePeers tells rank 0 (leader) every rank's address of the remote-launch service, at
// the job channel's "remote" phase: a worker says its own as it arrives.
func SharePeers(ctx context.Context, svc *Service, leader *jobchan.Leader, worker *jobchan.Worker) error {
	rank, world := svc.cfg.Chan.Rank, svc.cfg.Chan.World
	if worker != nil {
		_, err := worker.WaitWith(ctx, "remote", map[string]string{"remote." + strconv.Itoa(rank): svc.Addr()})
		return err
	}
	said, err := leader.Gather(ctx, "remote")
	if err != nil {
		return err
	}
	peers := map[int]string{}
	for k, v := range said {
		if n, err := strconv.Atoi(strings.TrimPrefix(k, "remote.")); err == nil && n > 0 && n < world {
			peers[n] = v
		}
	}
	svc.SetPeers(peers)
	return leader.Release(ctx, "remote", nil)
}

// CheckLauncher says why launcher's program is not where the benchmark runs: in the image
// ref, called name (eng, an engine's client: a container created to look, never started) or, with eng
// nil, on this node's PATH (the process runtime). nil when it is there, or when eng cannot
// be asked.
func CheckLauncher(ctx context.Context, eng any, ref, name, launcher string, labels map[string]string) error {
	progs := agentwire.LaunchPrograms(launcher)
	family := map[string]string{manifest.LauncherMPIRun: "Open MPI", manifest.LauncherMPIExec: "MPICH or Intel MPI"}[launcher]
	if eng == nil {
		for _, p := range progs {
			if _, err := exec.LookPath(p); err == nil {
				return nil
			}
		}
		return &launch.Error{Msg: fmt.Sprintf("launcher %s: none of %s is on this node's PATH (%s): install %s, or name the launcher of the MPI the node has",
			launcher, strings.Join(progs, ", "), os.Getenv("PATH"), family)}
	}
	api, ok := eng.(engine.ProgramAPI)
	if !ok {
		return nil
	}
	found, path, err := engine.FindProgram(ctx, api, ref, progs, labels)
	if err != nil || found != "" {
		return nil // a look that failed decides nothing: the launch says what is wrong
	}
	return &launch.Error{Msg: fmt.Sprintf("launcher %s: the image %s has none of %s on its PATH (%s): install %s in the image, or name the launcher of the MPI it has",
		launcher, name, strings.Join(progs, ", "), path, family)}
}

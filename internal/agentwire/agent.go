package agentwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The agent's environment, set by benchctl in the benchmark's container (or process).
const (
	// EnvSocket is the node's socket the agent asks (default: agent.sock beside the agent).
	EnvSocket = "BENCHCTL_AGENT_SOCKET"
	// EnvToken is the job's token for this node's socket.
	EnvToken = "BENCHCTL_AGENT_TOKEN"
)

// SocketName is the node's socket's name, beside the agent in the folder benchctl mounts.
const SocketName = "agent.sock"

// Open is the agent's request to its node's benchctl: run Words (a command line, as ssh
// gets it: the words are joined with spaces and read by a shell there, as sshd does) on
// Host, beside that node's benchmark.
type Open struct {
	Token string   `json:"token"`
	Host  string   `json:"host"`
	Words []string `json:"words"`
}

// Remote is what rank 0's node asks the target node (over the job channel): run Words
// beside run Run, for the agent of rank From.
type Remote struct {
	Run   string   `json:"run"`
	Words []string `json:"words"`
}

// ExitTransport is the agent's exit code when it could not reach, or lost, its node's
// benchctl (ssh's 255: a launcher reads it as "the remote launch failed").
const ExitTransport = 255

// killGrace is how long a command's process group has between SIGTERM and SIGKILL.
const killGrace = 3 * time.Second

// Main is the agent: benchctl-agent's main, with its arguments (args[0] the program).
//
//	agent [ssh options] HOST WORD...   run a command on HOST beside its benchmark (an MPI
//	                                   launcher's remote-launch hook: plm_rsh_agent, launcher-exec)
//	agent run -- PROGRAM ARG...        the wrapper a node runs a remote command in: its stdin
//	                                   is frames (stdin, signals); the command ends when they do
//	agent wait                         wait for SIGTERM (a node's benchmark while rank 0's launcher runs)
//	agent launch mpirun|mpiexec -- ARG...   run the launcher the image has
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, "benchctl-agent: usage: benchctl-agent [ssh options] HOST COMMAND... (benchctl places it for MPI launchers; see docs/mpi.md)")
		return ExitTransport
	}
	switch args[1] {
	case "wait":
		return wait(stderr)
	case "run":
		if len(args) < 4 || args[2] != "--" {
			fmt.Fprintln(stderr, "benchctl-agent: usage: benchctl-agent run -- PROGRAM ARG...")
			return ExitTransport
		}
		return run(args[3:], stdin, stderr)
	case "launch":
		if len(args) < 4 || args[3] != "--" {
			fmt.Fprintln(stderr, "benchctl-agent: usage: benchctl-agent launch mpirun|mpiexec -- ARG...")
			return ExitTransport
		}
		return launch(args[2], args[4:], stderr)
	}
	host, words, err := ParseSSH(args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "benchctl-agent: %v\n", err)
		return ExitTransport
	}
	sock := os.Getenv(EnvSocket)
	if sock == "" {
		exe, err := os.Executable()
		if err != nil {
			exe = args[0]
		}
		sock = filepath.Join(filepath.Dir(exe), SocketName)
	}
	return Call(sock, Open{Token: os.Getenv(EnvToken), Host: host, Words: words}, stdin, stdout, stderr)
}

// sshWithValue are ssh's options that take a value.
const sshWithValue = "bcDEeFIiJLlmOopQRSWw"

// ParseSSH reads an ssh command line as a launcher writes it: options (hydra's -x, any
// other of ssh's, with their values), the host (user@ before it dropped), the command's
// words.
func ParseSSH(args []string) (host string, words []string, err error) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if strings.ContainsRune(sshWithValue, rune(a[1])) && len(a) == 2 {
			i += 2
		} else {
			i++
		}
	}
	if i >= len(args) {
		return "", nil, errors.New("no host (usage: benchctl-agent [ssh options] HOST COMMAND)")
	}
	host = args[i]
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	words = args[i+1:]
	switch {
	case host == "":
		return "", nil, errors.New("an empty host name")
	case len(words) == 0:
		return "", nil, fmt.Errorf("no command for %s: an interactive session is not what benchctl's agent gives", host)
	case len(words) > MaxWords:
		return "", nil, fmt.Errorf("a command of %d words, more than %d", len(words), MaxWords)
	}
	return host, words, nil
}

// Call asks the node's benchctl at sock to run o, relays stdin, stdout and stderr, and
// returns the command's exit code (ExitTransport when it could not be asked, or the
// link was lost; 128+N when this agent got signal N and ended the command).
func Call(sock string, o Open, stdin io.Reader, stdout, stderr io.Writer) int {
	b, err := json.Marshal(o)
	if err != nil || len(b) > MaxOpen {
		fmt.Fprintf(stderr, "benchctl-agent: the command for %.200s is longer than %d bytes\n", o.Host, MaxOpen)
		return ExitTransport
	}
	nc, err := net.DialTimeout("unix", sock, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "benchctl-agent: cannot reach this node's benchctl at %s: %v (the agent works only inside a benchmark benchctl runs with launcher mpirun or mpiexec)\n", sock, err)
		return ExitTransport
	}
	defer nc.Close()
	c := NewConn(nc, nc)
	if err := c.Send(KindOpen, b); err != nil {
		fmt.Fprintf(stderr, "benchctl-agent: %v\n", err)
		return ExitTransport
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if stdin != nil {
		go func() {
			_, _ = io.Copy(Writer{c, KindStdin}, stdin)
			_ = c.Send(KindStdinEOF, nil)
		}()
	}
	type end struct {
		code int
		err  error
	}
	ended := make(chan end, 1)
	go func() {
		for {
			kind, p, err := c.Recv()
			if err != nil {
				ended <- end{ExitTransport, err}
				return
			}
			switch kind {
			case KindStdout:
				_, _ = stdout.Write(p)
			case KindStderr:
				_, _ = stderr.Write(p)
			case KindExit:
				code, err := ExitCode(p)
				ended <- end{code, err}
				return
			case KindRefuse:
				ended <- end{ExitTransport, fmt.Errorf("refused: %s", p)}
				return
			}
		}
	}()
	var got os.Signal
	for {
		select {
		case e := <-ended:
			if e.err != nil {
				if got != nil {
					return 128 + int(got.(syscall.Signal))
				}
				fmt.Fprintf(stderr, "benchctl-agent: %.200s: %v\n", o.Host, e.err)
				return ExitTransport
			}
			if got != nil && e.code == 0 {
				return 128 + int(got.(syscall.Signal))
			}
			return e.code
		case s := <-sigs:
			if got == nil {
				got = s
				_ = c.Send(KindSignal, []byte{byte(s.(syscall.Signal))})
				time.AfterFunc(killGrace+2*time.Second, func() { nc.Close() })
			}
		}
	}
}

// WaitingLine is what wait writes (to its node's benchmark log) once it catches the
// signals that end it: from then on a SIGTERM ends it with 0 (before, Go's default ends
// it with 143; the kernel's signal mask cannot tell the two apart, Go's runtime catches
// SIGTERM from its start).
const WaitingLine = "benchctl-agent: this node's ranks run under rank 0's MPI launcher; waiting for it to end"

// wait waits for SIGTERM, SIGINT or SIGHUP, and exits 0. As a container's first process
// it reaps the orphans the commands run beside it leave (an init's job).
func wait(stderr io.Writer) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	fmt.Fprintln(stderr, WaitingLine)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return 0
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
	return 0
}

// run runs argv in its own process group, fed by the frames on stdin: its stdin's bytes and
// end, and signals for the group. When the frames end without a stdin end (the link was
// lost) or this wrapper gets SIGTERM, the group gets SIGTERM, then SIGKILL; when the
// command ends, what is left of its group is ended too. It returns the command's exit code
// (128+N for a signal N).
func run(argv []string, frames io.Reader, stderr io.Writer) int {
	runtime.LockOSThread() // Pdeathsig follows the thread that started the child
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(stderr, "benchctl-agent: %v\n", err)
		return ExitTransport
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "benchctl-agent: %v\n", err)
		return 127
	}
	pgid := cmd.Process.Pid
	group := func(s syscall.Signal) { _ = syscall.Kill(-pgid, s) }
	end := func() {
		group(syscall.SIGTERM)
		time.AfterFunc(killGrace, func() { group(syscall.SIGKILL) })
	}
	go func() {
		c := NewConn(frames, io.Discard)
		for {
			kind, p, err := c.Recv()
			if err != nil {
				in.Close()
				end() // the link is lost: nobody waits for this command
				return
			}
			switch kind {
			case KindStdin:
				_, _ = in.Write(p)
			case KindStdinEOF:
				in.Close()
			case KindSignal:
				if len(p) == 1 {
					if s := syscall.Signal(p[0]); s == syscall.SIGTERM || s == syscall.SIGINT || s == syscall.SIGHUP {
						end()
					} else if s == syscall.SIGKILL {
						group(s)
					}
				}
			}
		}
	}()
	go func() {
		<-sigs
		end()
	}()
	err = cmd.Wait()
	group(syscall.SIGTERM) // what it left behind in its group
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return ExitTransport
}

// Launchers' programs, the most specific first: Debian installs both MPIs side by side,
// and its plain mpirun and mpiexec may be either.
var launchPrograms = map[string][]string{
	"mpirun":  {"mpirun.openmpi", "mpirun"},
	"mpiexec": {"mpiexec.hydra", "mpiexec.mpich", "mpiexec"},
}

// LaunchPrograms are the programs launcher name runs, in the order looked for.
func LaunchPrograms(name string) []string { return launchPrograms[name] }

// launch replaces itself with the first of launcher's programs on PATH.
func launch(launcher string, args []string, stderr io.Writer) int {
	progs := launchPrograms[launcher]
	if progs == nil {
		fmt.Fprintf(stderr, "benchctl-agent: %q is not an MPI launcher (mpirun, mpiexec)\n", launcher)
		return ExitTransport
	}
	for _, p := range progs {
		if path, err := exec.LookPath(p); err == nil {
			err = syscall.Exec(path, append([]string{p}, args...), os.Environ())
			fmt.Fprintf(stderr, "benchctl-agent: launcher %s: running %s: %v\n", launcher, path, err)
			return 126
		}
	}
	family := "Open MPI"
	if launcher == "mpiexec" {
		family = "MPICH or Intel MPI (hydra)"
	}
	fmt.Fprintf(stderr, "benchctl-agent: launcher %s: none of %s is on PATH (%s) where the benchmark runs: install %s there, or name the launcher of the MPI it has\n",
		launcher, strings.Join(progs, ", "), os.Getenv("PATH"), family)
	return 127
}

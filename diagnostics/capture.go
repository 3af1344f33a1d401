package diagnostics

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/proctable"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload"
)

// Runtime is what capturing asks of the runtime the benchmark ran in (workload.Runtime has
// it): the process's state, the processes inside it, and what the runtime is.
type Runtime interface {
	Inspect(ctx context.Context, id string) (workload.State, error)
	Top(ctx context.Context, id string) (workload.Top, error)
	Describe(ctx context.Context) (string, error)
}

// Limits bound a report.
const (
	MaxLogLines  = 200
	MaxLineBytes = 2048
	MaxProcesses = 200
	MaxSockets   = 200
	// MaxSocketFDs bounds the open files read to tell a workload's sockets from the node's.
	MaxSocketFDs = 100000
)

// Report is what was captured about one container.
type Report struct {
	Reason        string     `json:"reason"` // why diagnostics were taken: exit code, timeout, ...
	Container     string     `json:"container"`
	CapturedAt    time.Time  `json:"capturedAt"`
	Running       bool       `json:"running"`
	ExitCode      int        `json:"exitCode"`
	OOMKilled     bool       `json:"oomKilled"`
	StateError    string     `json:"stateError,omitempty"`
	EngineVersion string     `json:"engineVersion,omitempty"`
	GPUs          []string   `json:"gpus,omitempty"`
	ProcessTitles []string   `json:"processTitles,omitempty"`
	Processes     [][]string `json:"processes,omitempty"`
	Sockets       []Socket   `json:"listeningSockets,omitempty"`
	GPUState      *GPUState  `json:"gpuState,omitempty"` // the node's GPUs when the report was taken
	LogTail       []string   `json:"logTail"`
	NotCaptured   []string   `json:"notCaptured,omitempty"` // what could not be read, and why
}

// Socket is a listening TCP socket seen in the container's network namespace.
type Socket struct {
	Proto string `json:"proto"`
	Local string `json:"local"`
}

// Capture inspects the container (id may already have exited), reading processes and
// sockets only while it runs. logTail is the end of its log as the caller streamed it;
// gpus describe the GPUs it was given, and when there are any, the node's GPU management
// library (AMD SMI or NVML) is asked what its GPUs are doing (GPUState). A node without
// one has no GPU state, and a note says why. Every text the report quotes (the reason, the
// log, the process table, the engine's errors) is passed through secrets, which knows the
// job's secret values (nil: it hides credential-like NAME=value and --name value only).
func Capture(ctx context.Context, eng Runtime, id, reason string, logTail, gpus []string, secrets *manifest.TextRedactor) Report {
	return capture(ctx, eng, id, reason, logTail, gpus, secrets, gpu.Snapshot)
}

// snapshotFunc is gpu.Snapshot; tests pass a fake.
type snapshotFunc func(context.Context, gpu.Options) (gpu.Inventory, error)

func capture(ctx context.Context, eng Runtime, id, reason string, logTail, gpus []string, secrets *manifest.TextRedactor, snapshot snapshotFunc) Report {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	r := Report{Reason: reason, Container: id, CapturedAt: time.Now().UTC(), GPUs: gpus, LogTail: bound(redactLines(logTail, secrets))}
	r.container(ctx, eng, id)
	if len(gpus) > 0 { // after the container: what the engine knows matters most, and the library may be slow
		if inv, err := snapshot(ctx, gpu.Options{}); err != nil {
			r.note("gpu state", err)
		} else {
			r.GPUState = gpuState(inv)
		}
	}
	r.redact(secrets)
	return r
}

// redactWindow is how much of a log line past MaxLineBytes is redacted before the line is
// cut there: a secret that starts before the cut is hidden whole, not left half shown.
const redactWindow = 64 << 10

// redactLines redacts the last MaxLogLines lines of a log (each within a bounded window).
func redactLines(lines []string, secrets *manifest.TextRedactor) []string {
	lines = lines[max(0, len(lines)-MaxLogLines):]
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = secrets.Redact(l[:min(len(l), MaxLineBytes+redactWindow)])
	}
	return out
}

// redact hides secrets in every text of the report that a container or the engine wrote.
func (r *Report) redact(secrets *manifest.TextRedactor) {
	r.Reason = secrets.Redact(r.Reason)
	r.StateError = secrets.Redact(r.StateError)
	for _, p := range r.Processes {
		secrets.RedactAll(p)
	}
	secrets.RedactAll(r.NotCaptured)
	if g := r.GPUState; g != nil {
		for i := range g.GPUs {
			for j := range g.GPUs[i].Processes {
				p := &g.GPUs[i].Processes[j]
				p.Name = secrets.Redact(p.Name)
			}
		}
	}
}

func (r *Report) note(what string, err error) {
	r.NotCaptured = append(r.NotCaptured, fmt.Sprintf("%s: %v", what, err))
}

func (r *Report) container(ctx context.Context, eng Runtime, id string) {
	if d, err := eng.Describe(ctx); err == nil {
		r.EngineVersion = d
	} else {
		r.note("engine version", err)
	}
	st, err := eng.Inspect(ctx, id)
	if err != nil {
		r.note("container state", err)
		return
	}
	r.Running, r.ExitCode, r.OOMKilled, r.StateError = st.Running, st.ExitCode, st.OOMKilled, st.Error
	if st.Running {
		if top, err := eng.Top(ctx, id); err == nil {
			r.ProcessTitles = top.Titles
			r.Processes = slices.Clone(top.Processes[:min(len(top.Processes), MaxProcesses)])
		} else {
			r.note("processes", err)
		}
		if socks, err := r.listening(st.Pid); err == nil {
			r.Sockets = socks
		} else {
			r.note("listening sockets", err)
		}
	} else {
		r.NotCaptured = append(r.NotCaptured, "processes and sockets: the container had already exited")
	}
}

func bound(lines []string) []string {
	if len(lines) > MaxLogLines {
		lines = lines[len(lines)-MaxLogLines:]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) > MaxLineBytes {
			l = l[:MaxLineBytes] + "…"
		}
		out[i] = l
	}
	return out
}

// listening is the listening TCP sockets of the workload whose main process is pid: all of
// its network namespace's when it has one of its own, and only those its own processes hold
// (the report's process table) when it shares benchctl's, as a process or a container on the
// host's network does: the node's other listeners (sshd, slurmd, other jobs) are not its.
func (r *Report) listening(pid int) ([]Socket, error) {
	if !sameNetNS(pid, os.Getpid()) {
		return listening(pid, nil)
	}
	col := slices.Index(r.ProcessTitles, "PID")
	if col < 0 {
		return nil, fmt.Errorf("it shares the node's network, and its process table has no PID column to tell its sockets by")
	}
	pids := []int{pid}
	for _, p := range r.Processes {
		if col < len(p) {
			// a number the table gives that is not pid's descendant (an engine that tells
			// pids as its container sees them) names some other process of the node
			if n, err := strconv.Atoi(p[col]); err == nil && n != pid && descends(n, pid) {
				pids = append(pids, n)
			}
		}
	}
	return listening(pid, socketInodes(pids))
}

// descends tells whether process p descends from process root, by its parents (a chain of
// at most 256).
func descends(p, root int) bool {
	for range 256 {
		pp, _, _, ok := proctable.Stat(p)
		if !ok || pp <= 1 {
			return false
		}
		if pp == root {
			return true
		}
		p = pp
	}
	return false
}

// sameNetNS tells whether processes a and b are in one network namespace.
func sameNetNS(a, b int) bool {
	na, err1 := os.Readlink(filepath.Join("/proc", strconv.Itoa(a), "ns", "net"))
	nb, err2 := os.Readlink(filepath.Join("/proc", strconv.Itoa(b), "ns", "net"))
	return err1 == nil && err2 == nil && na == nb
}

// socketInodes is the inodes of the sockets the processes pids hold open (their fds'
// "socket:[N]" links), at most MaxSocketFDs links read in all.
func socketInodes(pids []int) map[string]bool {
	out := map[string]bool{}
	read := 0
	for _, pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := d.Readdirnames(MaxSocketFDs - read)
		d.Close()
		for _, n := range names {
			read++
			if l, err := os.Readlink(filepath.Join(dir, n)); err == nil {
				if in, ok := strings.CutPrefix(l, "socket:["); ok {
					out[strings.TrimSuffix(in, "]")] = true
				}
			}
		}
		if read >= MaxSocketFDs {
			break
		}
	}
	return out
}

// listening reads the listening TCP sockets of pid's network namespace from
// /proc/<pid>/net/tcp{,6}: no ss or netstat needed in the image. With inodes, only the
// sockets among them.
func listening(pid int, inodes map[string]bool) ([]Socket, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("no process id")
	}
	var out []Socket
	var firstErr error
	for _, proto := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "net", proto))
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() && len(out) < MaxSockets {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A = LISTEN
				continue
			}
			if inodes != nil && !inodes[fields[9]] {
				continue
			}
			out = append(out, Socket{Proto: proto, Local: decodeAddr(fields[1])})
		}
		f.Close()
	}
	if out == nil && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// decodeAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func decodeAddr(s string) string {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return s
	}
	if len(hexIP) == 8 {
		v, err := strconv.ParseUint(hexIP, 16, 32)
		if err != nil {
			return s
		}
		return fmt.Sprintf("%d.%d.%d.%d:%d", byte(v), byte(v>>8), byte(v>>16), byte(v>>24), port)
	}
	return "[" + hexIP + "]:" + strconv.FormatUint(port, 10)
}

// Write stores the report in dir as report.json and a readable summary.txt, for the job's
// owner only (folder 0700, files 0600): a process table and a log can hold secrets that
// redaction does not know (a value read from a file, a credential named like nothing), and
// the job folder is shared by a team. collect, run by the same user, reads them.
func (r Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return r.WriteAt(d)
}

// Summary is the report as text, most important first.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "reason:     %s\ncontainer:  %s\ncaptured:   %s\n", r.Reason, r.Container, r.CapturedAt.Format(time.RFC3339))
	if r.Running {
		b.WriteString("state:      running when captured\n")
	} else {
		fmt.Fprintf(&b, "exit code:  %d\noom killed: %v\n", r.ExitCode, r.OOMKilled)
	}
	if r.StateError != "" {
		fmt.Fprintf(&b, "engine error: %s\n", r.StateError)
	}
	if r.EngineVersion != "" {
		fmt.Fprintf(&b, "engine:     %s\n", r.EngineVersion)
	}
	if len(r.GPUs) > 0 {
		fmt.Fprintf(&b, "gpus:       %s\n", strings.Join(r.GPUs, ", "))
	}
	fmt.Fprintf(&b, "\nlast %d log lines:\n", len(r.LogTail))
	for _, l := range r.LogTail {
		b.WriteString("  | " + l + "\n")
	}
	if len(r.Processes) > 0 {
		fmt.Fprintf(&b, "\nprocesses (%s):\n", strings.Join(r.ProcessTitles, " "))
		for _, p := range r.Processes {
			b.WriteString("  " + strings.Join(p, " ") + "\n")
		}
	}
	if g := r.GPUState; g != nil {
		b.WriteString("\n" + g.summary())
	}
	if len(r.Sockets) > 0 {
		b.WriteString("\nlistening sockets:\n")
		for _, s := range r.Sockets {
			fmt.Fprintf(&b, "  %s %s\n", s.Proto, s.Local)
		}
	}
	for _, n := range r.NotCaptured {
		b.WriteString("\nnot captured: " + n + "\n")
	}
	return b.String()
}

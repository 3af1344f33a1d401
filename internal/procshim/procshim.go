//go:build linux

// Package procshim is the start of a benchmark the process runtime runs with limits to set:
// the child is benchctl itself, whose environment holds Env; this package's init sets the
// limits, drops the variable and executes the benchmark's program, never returning. It
// imports nothing of benchctl's and little else, so that its init runs among the first of
// the binary's and the benchmark's start costs little more than an exec.
package procshim

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Env is in a child's environment between its start and its exec of the benchmark's
// program: the Request, as JSON. The shim drops it before the exec.
const Env = "BENCHCTL_PROCESS_SHIM"

// Request is what a child reads from Env: the program (an absolute path) and the limits to
// set before it is executed.
type Request struct {
	Program string  `json:"program"`
	Limits  []Limit `json:"limits,omitempty"`
}

// Limit is one resource limit, by its ulimit name; -1 is unlimited.
type Limit struct {
	Name string `json:"name"`
	Soft int64  `json:"soft"`
	Hard int64  `json:"hard"`
}

// init makes this process a benchmark's start when the process runtime started it (its
// environment holds Env): it sets the limits, drops the variable and executes the
// benchmark's program with this process's arguments, never returning; when the limits
// cannot be set or the program not executed, it says why on stderr and exits 127. In any
// other process it does nothing. It runs before main (and before a test binary's TestMain),
// so that any program holding the process runtime is its own shim.
func init() { Run() }

// Run is what init does (for a test that sets Env after the start).
func Run() {
	raw, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "benchctl: starting the benchmark: "+format+"\n", args...)
		os.Exit(127)
	}
	var req Request
	if err := json.Unmarshal([]byte(raw), &req); err != nil || req.Program == "" {
		fail("a garbled %s (%v)", Env, err)
	}
	for _, l := range req.Limits {
		res, ok := Rlimits[l.Name]
		if !ok {
			fail("no limit %q on this system", l.Name)
		}
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: rlim(l.Soft), Max: rlim(l.Hard)}); err != nil {
			fail("setting the limit %s to %s:%s: %v", l.Name, limitText(l.Soft), limitText(l.Hard), err)
		}
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, Env+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(req.Program, os.Args, env)
	fail("%s: %v", req.Program, err)
}

// Rlimits are the limits a request may set, by their ulimit names.
var Rlimits = map[string]int{
	"core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU, "data": unix.RLIMIT_DATA, "fsize": unix.RLIMIT_FSIZE,
	"locks": unix.RLIMIT_LOCKS, "memlock": unix.RLIMIT_MEMLOCK, "msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE,
	"nofile": unix.RLIMIT_NOFILE, "nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS, "rtprio": unix.RLIMIT_RTPRIO,
	"rttime": unix.RLIMIT_RTTIME, "sigpending": unix.RLIMIT_SIGPENDING, "stack": unix.RLIMIT_STACK, "as": unix.RLIMIT_AS,
}

// rlim is a limit's value for setrlimit: -1 is unlimited.
func rlim(v int64) uint64 {
	if v < 0 {
		return unix.RLIM_INFINITY
	}
	return uint64(v)
}

func limitText(v int64) string {
	if v < 0 {
		return "unlimited"
	}
	return fmt.Sprint(v)
}

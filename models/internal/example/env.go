// Package example holds what the example benchmarks share: reading the node environment
// benchctl sets in every container, and writing a results CSV the way benchctl reads it.
package example

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// NodeEnv is what benchctl tells the program, through the environment, about its place in
// the run.
type NodeEnv struct {
	Rank       int    // NODE_RANK, 0 when unset
	NNodes     int    // NNODES, 1 when unset
	MasterAddr string // MASTER_ADDR, 127.0.0.1 when unset
	MasterPort int    // MASTER_PORT, 29500 when unset
	OutputDir  string // BENCHCTL_OUTPUT_DIR, "" when unset
}

// maxNodes bounds NNODES, to catch nonsense before it allocates anything.
const maxNodes = 65536

// ReadEnv reads the benchctl variables through getenv. A bad value is an error that names
// the variable.
func ReadEnv(getenv func(string) string) (NodeEnv, error) {
	e := NodeEnv{MasterAddr: "127.0.0.1", OutputDir: getenv("BENCHCTL_OUTPUT_DIR")}
	var err error
	if e.NNodes, err = envInt(getenv, "NNODES", 1, 1, maxNodes); err != nil {
		return e, err
	}
	if e.Rank, err = envInt(getenv, "NODE_RANK", 0, 0, e.NNodes-1); err != nil {
		return e, fmt.Errorf("%w (NNODES=%d)", err, e.NNodes)
	}
	if e.MasterPort, err = envInt(getenv, "MASTER_PORT", 29500, 1, 65535); err != nil {
		return e, err
	}
	if s := strings.TrimSpace(getenv("MASTER_ADDR")); s != "" {
		e.MasterAddr = s
	}
	return e, nil
}

// envInt reads a whole number in [lo, hi] from the variable name, or def when it is unset.
func envInt(getenv func(string) string, name string, def, lo, hi int) (int, error) {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a whole number", name, s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s=%d is out of range: it must be between %d and %d", name, n, lo, hi)
	}
	return n, nil
}

// NewFlagSet is an example program's flag set: errors and -h go to stderr, and the usage
// text is "usage: NAME [flags]", the one-line description, then the flags.
func NewFlagSet(name, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags]\n%s\n", name, description)
		fs.PrintDefaults()
	}
	return fs
}

// ParseFlags parses a program's flags and refuses arguments: ok is false when the program
// should exit, with code 0 after -h and 2 after a bad flag or a stray argument (flag has
// already printed the problem; stray arguments are reported on the flag set's output).
func ParseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q (%s takes flags only)\n", fs.Name(), fs.Args(), fs.Name())
		return 2, false
	}
	return 0, true
}

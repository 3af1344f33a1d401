package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/benchctl/benchctl/internal/procgroup"
	"github.com/benchctl/benchctl/internal/safefile"
)

// Limits of what is read.
const (
	// MaxValue is the longest value kept (bytes); a longer one is cut and ends in "…".
	MaxValue = 256
	// maxFile bounds a small sysfs or /etc file; maxCPUInfo /proc/cpuinfo (about 1.2 KiB
	// per logical CPU: 4 MiB holds 3,000 of them).
	maxFile    = 64 << 10
	maxCPUInfo = 4 << 20
	// maxEntries bounds a folder listing (NUMA nodes, RDMA devices, ports, CPUs).
	maxEntries = 4096
	// SlurmTimeout bounds `srun --version`.
	SlurmTimeout = 5 * time.Second
)

// Options say where to read.
type Options struct {
	// Root is the folder /proc, /sys and /etc are read under; "" means "/". Tests point it
	// at a recorded tree.
	Root string
	// Lookup reads the environment (nil: os.LookupEnv): SLURM_JOB_ID says whether this
	// runs under Slurm.
	Lookup func(string) (string, bool)
	// Run runs a program with an argument list and returns its stdout (nil: os/exec with
	// SlurmTimeout). Only `srun --version` is run.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// Hostname is the node's name (""; os.Hostname).
	Hostname string
}

func (o Options) path(parts ...string) string {
	root := o.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// Read reads this machine's facts. It never fails: what could not be read is in
// Facts.Unavailable, with why.
func Read(ctx context.Context, o Options) Facts {
	f := Facts{Unavailable: map[string]string{}, NUMA: []NUMANode{}, Network: []NetDevice{}}
	miss := func(field string, err error) {
		if err != nil {
			f.Unavailable[field] = cut(err.Error())
		}
	}
	f.Hostname = o.Hostname
	if f.Hostname == "" {
		h, err := os.Hostname()
		f.Hostname = cut(h)
		miss("hostname", err)
	}
	var err error
	f.Kernel, err = readKernel(o)
	miss("kernel", err)
	f.OS, err = readOS(o)
	miss("os", err)
	f.CPU, err = readCPU(o)
	miss("cpu", err)
	f.MemoryBytes, err = readMemTotal(o)
	miss("memory", err)
	f.NUMA, err = readNUMA(o)
	miss("numa", err)
	f.Network, err = readNetwork(o)
	miss("network", err)
	f.Slurm, err = readSlurm(ctx, o)
	miss("slurm", err)
	return f
}

// readSmall reads a small file under the root: a regular file (links followed: sysfs is
// made of them) of at most limit bytes; a FIFO is refused without blocking.
func (o Options) readSmall(limit int64, parts ...string) (string, error) {
	data, err := safefile.ReadFile(o.path(parts...), limit)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// value is the first line of a sysfs file, trimmed and cut to MaxValue.
func (o Options) value(parts ...string) (string, error) {
	s, err := o.readSmall(maxFile, parts...)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(s, "\n")
	return cut(strings.TrimSpace(line)), nil
}

// list is the names in a folder under the root, sorted, at most maxEntries of them.
func (o Options) list(parts ...string) ([]string, error) {
	dir := o.path(parts...)
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() { // a FIFO is never opened: reading it would wait for a writer
		return nil, fmt.Errorf("%s is %s, not a folder", dir, safefile.Describe(st.Mode()))
	}
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(maxEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// cut is s as one value: invalid UTF-8 replaced, at most MaxValue bytes.
func cut(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxValue {
		return s
	}
	n := MaxValue - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// numericSuffix sorts "node10" after "node9": the number after prefix, -1 if none.
func numericSuffix(name, prefix string) int {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok || s == "" {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func readKernel(o Options) (Kernel, error) {
	rel, err := o.value("proc", "sys", "kernel", "osrelease")
	if err != nil {
		return Kernel{}, err
	}
	ver, err := o.value("proc", "sys", "kernel", "version")
	return Kernel{Release: rel, Version: ver}, err
}

func readOS(o Options) (OS, error) {
	s, err := o.readSmall(maxFile, "etc", "os-release")
	if errors.Is(err, fs.ErrNotExist) { // os-release(5): /usr/lib/os-release when /etc has none
		s, err = o.readSmall(maxFile, "usr", "lib", "os-release")
	}
	if err != nil {
		return OS{}, err
	}
	var out OS
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		v = cut(unquote(v))
		switch k {
		case "PRETTY_NAME":
			out.PrettyName = v
		case "ID":
			out.ID = v
		case "VERSION_ID":
			out.VersionID = v
		}
	}
	if out.PrettyName == "" && out.ID == "" {
		return out, fmt.Errorf("%s has neither PRETTY_NAME nor ID", o.path("etc", "os-release"))
	}
	return out, nil
}

// unquote strips os-release's shell-style quotes ("..." or '...') without expanding anything.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(v)
}

func readMemTotal(o Options) (uint64, error) {
	s, err := o.readSmall(maxFile, "proc", "meminfo")
	if err != nil {
		return 0, err
	}
	if n, ok := meminfoTotal(s, "MemTotal:"); ok {
		return n, nil
	}
	return 0, fmt.Errorf("%s has no MemTotal line in kB", o.path("proc", "meminfo"))
}

// meminfoTotal finds "<key> <n> kB" in a meminfo text (a NUMA node's lines start with
// "Node <n> "), in bytes.
func meminfoTotal(s, key string) (uint64, bool) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		i := slices.Index(f, key)
		if i < 0 {
			continue
		}
		if i+2 >= len(f) || f[i+2] != "kB" { // "MemTotal: 527999720 kB": a value without its unit is not one
			return 0, false
		}
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil || n > 1<<53 {
			return 0, false
		}
		return n * 1024, true
	}
	return 0, false
}

func readSlurm(ctx context.Context, o Options) (string, error) {
	lookup := o.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if id, ok := lookup("SLURM_JOB_ID"); !ok || id == "" {
		return "not under Slurm", nil
	}
	run := o.Run
	if run == nil {
		run = runBounded
	}
	ctx, cancel := context.WithTimeout(ctx, SlurmTimeout)
	defer cancel()
	out, err := run(ctx, "srun", "--version")
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("srun --version did not answer within %s", SlurmTimeout)
		}
		return "", fmt.Errorf("srun --version: %w", err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return "", errors.New("srun --version printed nothing")
	}
	return cut(line), nil
}

// runBounded runs a program (an argument list, no shell) and keeps at most maxFile bytes
// of its stdout.
func runBounded(ctx context.Context, name string, args ...string) ([]byte, error) {
	var out capped
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = &out
	procgroup.Own(cmd)          // its children go with it when the context ends
	cmd.WaitDelay = time.Second // a child holding the pipe open cannot hold us
	err := cmd.Run()
	return out.b, err
}

// capped keeps the first maxFile bytes written to it and drops the rest.
type capped struct{ b []byte }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxFile - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

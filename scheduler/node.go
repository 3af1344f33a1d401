package scheduler

import (
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/benchctl/benchctl/jobdir"
)

// Node is this process's place in the job.
type Node struct {
	JobID      string   `json:"job"`
	Attempt    int      `json:"attempt"`
	Rank       int      `json:"rank"`
	World      int      `json:"world"`
	Hosts      []string `json:"nodes"`
	Host       string   `json:"host"`
	MasterAddr string   `json:"masterAddr"`
	MasterPort int      `json:"masterPort"` // for the benchmark (MASTER_PORT)
	Source     string   `json:"source"`     // slurm, env or local
	// Placement is where the scheduler put this task in its own names (Kubernetes: the
	// namespace, pod and node), which node.json records.
	Placement jobdir.Placement `json:"placement,omitzero"`
}

// ContextError is a bad or inconsistent node environment (exit 4).
type ContextError struct{ Var, Msg string }

func (e *ContextError) Error() string      { return e.Var + ": " + e.Msg }
func (e *ContextError) InvalidInput() bool { return true }

// portBase derives a job's port range start from its id: jobs sharing a node get
// different ranges of 20. The benchmark gets base (MASTER_PORT), the barrier
// base+1..base+8, the image stream (distribution: stream) base+10..base+17.
// Every range lies in 20000-32599, below Linux's ephemeral ports (32768-60999 by
// default): an outgoing connection's local port on the node can then not take the
// port the benchmark's rank 0 must listen on.
func portBase(job string) int {
	h := fnv.New32a()
	h.Write([]byte(job))
	return portRangeLow + int(h.Sum32()%portRanges)*20
}

const (
	portRangeLow = 20000
	portRanges   = 630 // 20000 + 629·20 + 17 = 32597
)

// StreamPorts is the image stream's port range for this node's job.
func (n Node) StreamPorts() []int {
	ports := make([]int, 8)
	for i := range ports {
		ports[i] = n.MasterPort + 10 + i
	}
	return ports
}

// BarrierPorts is the barrier's port range for this node's job.
func (n Node) BarrierPorts() []int {
	ports := make([]int, 8)
	for i := range ports {
		ports[i] = n.MasterPort + 1 + i
	}
	return ports
}

// Dir is this job attempt's folder in the shared directory.
func (n Node) Dir(shared string) jobdir.Dir {
	return jobdir.Layout{Shared: shared}.Job(n.JobID, n.Attempt)
}

// DirName is the job folder's name, jobs/<this>: the job id, with ".<attempt>" after a
// requeue.
func (n Node) DirName() string { return jobdir.Name(n.JobID, n.Attempt) }

// NodeName is the node folder's name, nodes/<this>: "<rank>-<host>".
func (n Node) NodeName() string { return jobdir.NodeName(n.Rank, n.Host) }

// MaxNodes bounds a job's node count (a world of two billion ranks is a typo).
const MaxNodes = 1 << 20

// Complete finishes a node context that a scheduler has read: a job id when it has none
// (local-<time>-<pid>, for a one-node job), checked to name a job folder (idVar is the
// variable it came from), the master's address (127.0.0.1 when unset), the host's base
// name, and the ports: MASTER_PORT when set (checked), else the job's own range
// (portBase).
func (n Node) Complete(lookup Lookup, idVar string) (Node, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	if n.JobID == "" {
		n.JobID = "local-" + time.Now().UTC().Format("20060102-150405") + "-" + strconv.Itoa(os.Getpid())
	}
	if err := ValidJobID(n.JobID); err != nil {
		return n, &ContextError{idVar, err.Error()}
	}
	if i := strings.LastIndexByte(n.JobID, '.'); i > 0 && i < len(n.JobID)-1 && strings.Trim(n.JobID[i+1:], "0123456789") == "" {
		// jobs/<id>.<n> is attempt n of job <id>: such an id would be read as another job's attempt.
		return n, &ContextError{idVar, fmt.Sprintf("%q ends in .<number>, which benchctl uses for requeued attempts (jobs/<id>.<attempt>); use another separator, e.g. %q",
			n.JobID, n.JobID[:i]+"-"+n.JobID[i+1:])}
	}
	if n.MasterAddr == "" {
		n.MasterAddr = "127.0.0.1"
	}
	n.Host = filepath.Base(n.Host)
	n.MasterPort = portBase(n.JobID)
	if v := get("MASTER_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1024 || p > 65535-17 {
			return n, &ContextError{"MASTER_PORT", fmt.Sprintf("%q is not a port in 1024-65518 (the barrier uses the 8 ports above it, the image stream the 8 after those)", v)}
		}
		n.MasterPort = p
	}
	return n, nil
}

// EnvInt reads a whole number ≥ min from variable k (get trims it); unset is 0, or 1 for
// NNODES.
func EnvInt(get func(string) string, k string, min int) (int, error) {
	v := get(k)
	if v == "" {
		if k == "NNODES" {
			return 1, nil
		}
		return 0, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < min || strings.Trim(v, "0123456789") != "" {
		return 0, &ContextError{k, fmt.Sprintf("%q is not a whole number ≥ %d", v, min)}
	}
	return i, nil
}

// ValidJobID checks that a job id can name a folder under jobs/ (and a container label).
func ValidJobID(id string) error {
	if id == "" || strings.ContainsAny(id, "/\\ \t") || id == "." || id == ".." || strings.IndexFunc(id, unicode.IsControl) >= 0 || len(id) > 200 {
		return fmt.Errorf("%q cannot name a folder", id)
	}
	return nil
}

// ValidHost: a host name or an IPv4/IPv6 address, nothing else (no port, no blanks).
func ValidHost(h string) bool {
	if net.ParseIP(strings.Trim(h, "[]")) != nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			return false
		}
	}
	return true
}

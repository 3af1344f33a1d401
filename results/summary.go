package results

import (
	"fmt"
	"strings"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/stats"
)

// SummaryVersion is the schema version of summary.json.
const SummaryVersion = 1

// Row and benchmark statuses, as madengine writes them.
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
	// StatusSkipped is a MAD model that every node skipped for its GPU architecture.
	StatusSkipped = "SKIPPED"
)

// Summary is summary.json: what collect found in a job folder, per node and per benchmark.
type Summary struct {
	Version         int             `json:"version"`
	Job             string          `json:"job"`
	Attempt         int             `json:"attempt"`
	Attempts        []int           `json:"attempts"`
	Name            string          `json:"name"` // the manifest's name
	Deployment      string          `json:"deployment"`
	BenchctlVersion string          `json:"benchctlVersion,omitempty"` // of the run
	CollectedBy     string          `json:"collectedBy,omitempty"`     // benchctl version of collect
	CollectedAt     time.Time       `json:"collectedAt"`
	StartedAt       *time.Time      `json:"startedAt,omitempty"`
	Image           jobdir.JobImage `json:"image"`
	// Images, when the benchmarks ran on several images, is each with its benchmarks
	// (Image is then the first).
	Images       []jobdir.JobImage  `json:"images,omitempty"`
	GPUArch      string             `json:"gpuArch,omitempty"` // the nodes' GPU architectures, comma-separated
	GPUName      string             `json:"gpuName,omitempty"` // the nodes' GPU product names, comma-separated
	Partial      bool               `json:"partial"`
	Scheduler    string             `json:"scheduler,omitempty"` // Slurm's job state, when it knew the job
	Status       string             `json:"status"`              // SUCCESS or FAILURE
	Nodes        NodeCounts         `json:"nodes"`
	NodeFailures []NodeFailure      `json:"nodeFailures"`
	Running      []NodeRef          `json:"running,omitempty"`
	Benchmarks   []BenchmarkSummary `json:"benchmarks"`
	// Experiment, for a job with one, is its trials reduced per benchmark, variant and row
	// key (Benchmarks then holds each trial's run of each benchmark).
	Experiment *ExperimentSummary `json:"experiment,omitempty"`
	Problems   []string           `json:"problems"` // about the job folder as a whole
	// NodeRecords is how the nodes' records (node.json) compare: the fields that differ.
	NodeRecords NodeRecords `json:"nodeRecords"`

	job  *jobdir.Job // job.json; nil when unreadable
	path string      // the job folder

	machines map[int]recordMachine // by rank, from the node records (perf.csv's machine columns)
}

// Path is the job folder the summary was made from ("" for a decoded summary.json).
func (s *Summary) Path() string { return s.path }

// JobJSON is the job's job.json as Aggregate read it: nil when unreadable.
func (s *Summary) JobJSON() *jobdir.Job { return s.job }

// NodeStates is the benchmark's nodes by state, for the report's node strip.
func (b *BenchmarkSummary) NodeStates() *NodeStates { return &b.nodes }

// WithJob gives a Summary built by hand (not by Aggregate) job.json's record j, whose node
// names and rules the report reads; it returns s.
func (s *Summary) WithJob(j *jobdir.Job) *Summary {
	s.job = j
	return s
}

// NodeCounts counts the nodes of a job by what their status files say.
type NodeCounts struct {
	Expected  int `json:"expected"`  // job.json's world
	Reported  int `json:"reported"`  // folders with a readable status.json
	Succeeded int `json:"succeeded"` // outcome success
	Failed    int `json:"failed"`    // failure, timeout, cancelled, unreadable or no status
	Running   int `json:"running"`   // still running (only with --partial)
	Missing   int `json:"missing"`   // no folder at all
}

// NodeRef names a node: its rank, host and folder (relative to the job folder).
type NodeRef struct {
	Rank int    `json:"rank"`
	Host string `json:"host"`
	Dir  string `json:"dir,omitempty"`
}

// NodeFailure is a node that failed, as a whole or for one benchmark. Log and Diagnostics
// are relative to the job folder. Nodes that left no folder, when there are many, are one
// NodeFailure per run of consecutive ranks: Rank to LastRank, without a host.
type NodeFailure struct {
	Rank        int    `json:"rank"`
	LastRank    int    `json:"lastRank,omitempty"` // the last rank of a run of missing nodes (0: one node)
	Host        string `json:"host"`
	Dir         string `json:"dir,omitempty"` // empty when the node never made its folder
	Outcome     string `json:"outcome"`       // failure, timeout, cancelled, missing, no-status, unreadable, ...
	ExitCode    int    `json:"exitCode"`
	Reason      string `json:"reason"`
	Log         string `json:"log,omitempty"`
	Diagnostics string `json:"diagnostics,omitempty"`
}

// Label is "rank-host", the node's folder name, or "ranks 2-1999999" for a run of nodes.
func (f NodeFailure) Label() string {
	if f.LastRank > f.Rank {
		return fmt.Sprintf("ranks %d-%d", f.Rank, f.LastRank)
	}
	return jobdir.NodeName(f.Rank, f.Host)
}

// Nodes is how many nodes f stands for: 1, or the length of a run of missing nodes.
func (f NodeFailure) Nodes() int { return max(1, f.LastRank-f.Rank+1) }

// CountNodes is how many nodes the failures stand for.
func CountNodes(f []NodeFailure) int {
	n := 0
	for _, x := range f {
		n += x.Nodes()
	}
	return n
}

// BenchmarkSummary is one benchmark across all nodes.
type BenchmarkSummary struct {
	Name       string      `json:"name"`
	Status     string      `json:"status"`
	Reason     string      `json:"reason,omitempty"`  // why it is a FAILURE
	Results    string      `json:"results,omitempty"` // the configured CSV file; empty: log lines
	Winner     *Candidate  `json:"winner"`
	WinnerWhy  string      `json:"winnerWhy,omitempty"`
	Candidates []Candidate `json:"candidates"`
	// MoreCandidates counts the candidates of a trial's run not listed: a trial keeps the
	// picked node's, the runner-up's and those with a problem (and no spread over nodes).
	MoreCandidates int           `json:"moreCandidates,omitempty"`
	Rows           []RowSummary  `json:"rows"`
	Failed         []NodeFailure `json:"failed"`
	Running        []NodeRef     `json:"running,omitempty"`
	Skipped        int           `json:"skipped"` // nodes that skipped it
	Durations      Durations     `json:"durations"`
	OtherKeys      []string      `json:"otherKeys,omitempty"` // rows other nodes reported that the winner's CSV lacks
	// RowsOmitted counts the rows summary.json leaves out (MaxSummaryRows); perf.csv has them.
	RowsOmitted int `json:"rowsOmitted,omitempty"`
	// GPUs is how many GPUs its containers got, over all nodes; GPUsPerNode the most on one
	// node (0: the nodes did not say).
	GPUs        int `json:"gpus,omitempty"`
	GPUsPerNode int `json:"gpusPerNode,omitempty"`
	// In a job with an experiment, each entry is one trial's run of a benchmark (Name is
	// its run name, benchmark@trial): Benchmark is the benchmark, Trial the trial's place in
	// the job's plan, Variant its variant's id, VariantTrial its number in the variant and
	// Warmup whether it is one (never counted). The node whose result was picked for the
	// trial is Winner.
	Benchmark    string `json:"benchmark,omitempty"`
	Trial        int    `json:"trial,omitempty"`
	Variant      string `json:"variant,omitempty"`
	VariantTrial int    `json:"variantTrial,omitempty"`
	Warmup       bool   `json:"warmup,omitempty"`
	// Telemetry is what the run's GPUs did (energy, power, throttling), over the nodes
	// that sampled them; nil when no node left telemetry of it (telemetry: off).
	Telemetry *Telemetry `json:"telemetry,omitempty"`
	// Tools are the tools (madengine's profilers and tracers) the benchmark ran under, in
	// the order they stacked, as job.json records them.
	Tools []string `json:"tools,omitempty"`
	// Artefacts are what each node's output folder of the run holds (the results CSV, the
	// tools' traces and profiles, the kept run_directory), by rank, for ranks below
	// MaxArtefactNodes; ArtefactNodesUnlisted counts the other nodes that ran it.
	Artefacts             []NodeArtefacts `json:"artefacts,omitempty"`
	ArtefactNodesUnlisted int             `json:"artefactNodesUnlisted,omitempty"`
	// Attempt, for a trial a requeued job resumed after, is the earlier attempt that ran it:
	// its candidates' and failures' paths are in that attempt's folder (jobs/<id>.<n>).
	Attempt *int `json:"attempt,omitempty"`

	table   *Table     // the winner's CSV (nil without a winner)
	nodes   NodeStates // for the report's node strip
	variant int        // the variant's index (a trial's run)
}

// Candidate is one node's result file for a benchmark, with its counts.
type Candidate struct {
	Rank            int    `json:"rank"`
	Host            string `json:"host"`
	Dir             string `json:"dir"`
	Source          string `json:"source"`         // csv, log, or none
	File            string `json:"file,omitempty"` // relative to the job folder
	Rows            int    `json:"rows"`
	WithPerformance int    `json:"withPerformance"`
	Numeric         int    `json:"numeric"` // rows whose performance is a number
	Problem         string `json:"problem,omitempty"`
}

// Label is "rank-host", the node's folder name.
func (c Candidate) Label() string { return jobdir.NodeName(c.Rank, c.Host) }

// RowSummary is one row of the winner's CSV with the statistics across nodes of its row key.
type RowSummary struct {
	Model       string            `json:"model"`
	Metric      string            `json:"metric"`
	Identity    map[string]string `json:"identity,omitempty"`   // key columns beyond model and metric
	Occurrence  int               `json:"occurrence,omitempty"` // 2, 3, ... for repeats of the same key
	Performance string            `json:"performance"`          // the winner's value, as written
	// Value is Performance as a number; absent when it is not one.
	Value  *float64    `json:"value,omitempty"`
	Status string      `json:"status"`
	Reason string      `json:"reason,omitempty"`
	Stats  stats.Stats `json:"stats"`
	// PerfPerWatt is Value per watt of the run's average draw (Telemetry.AvgPowerW), for a
	// throughput (a metric where higher is better); absent otherwise.
	PerfPerWatt *float64 `json:"perfPerWatt,omitempty"`
}

// Durations summarises a benchmark's run time (seconds) over the nodes that recorded one.
type Durations struct {
	Nodes int     `json:"nodes"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

// Failures lists what failed, for an error message: benchmarks, rows and nodes.
func (s *Summary) Failures() []string {
	var out []string
	for _, b := range s.Benchmarks {
		if b.Status == StatusFailure {
			out = append(out, b.Name+": "+b.Reason)
			continue
		}
		for _, r := range b.Rows {
			if r.Status == StatusFailure {
				out = append(out, fmt.Sprintf("%s: row %s %s: %s", b.Name, r.Model, r.Metric, r.Reason))
			}
		}
	}
	if len(out) == 0 && len(s.NodeFailures) > 0 {
		for _, f := range s.NodeFailures {
			label := "node " + f.Label()
			if f.Nodes() > 1 {
				label = f.Label() // "ranks 2-1999999"
			}
			out = append(out, label+": "+f.Reason)
		}
	}
	if len(out) == 0 && len(s.Running) > 0 {
		out = append(out, RunningReason(s.Running))
	}
	return out
}

// Err is a *FailedError when anything failed or a node is still running (--partial), else
// nil.
func (s *Summary) Err() error {
	if s.Status != StatusFailure {
		return nil
	}
	f := s.Failures()
	if len(f) == 0 {
		f = []string{"see summary.json"}
	}
	return &FailedError{JobID: s.Job, Failed: f, Unfinished: s.unfinished()}
}

// unfinished: the only reason the job is not a SUCCESS is nodes that are still running.
func (s *Summary) unfinished() bool {
	if len(s.Running) == 0 || len(s.NodeFailures) > 0 || len(s.Benchmarks) == 0 {
		return false
	}
	for _, b := range s.Benchmarks {
		if b.Status == StatusFailure && (len(b.Running) == 0 || len(b.Failed) > 0) {
			return false
		}
		for _, r := range b.Rows {
			if b.Status == StatusSuccess && r.Status == StatusFailure {
				return false
			}
		}
	}
	return true
}

func RunningReason(r []NodeRef) string {
	names := make([]string, 0, min(len(r), maxListedNodes))
	for i, n := range r {
		if i == maxListedNodes {
			names = append(names, fmt.Sprintf("and %d more", len(r)-maxListedNodes))
			break
		}
		names = append(names, jobdir.NodeName(n.Rank, n.Host))
	}
	return fmt.Sprintf("%s not finished (%s)", Plural(len(r), "node has", "nodes have"), strings.Join(names, ", "))
}

// Plural writes "1 node has" or "3 nodes have".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Package synth writes synthetic job folders in the layout `benchctl run` leaves in the
// shared directory (job.json, nodes/<rank>-<host>/status.json, results CSVs, logs,
// diagnostics), for collect's benchmarks and tests. Files are written plainly (no fsync):
// they are test data.
package synth

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// Options describe a synthetic job. Zero values take the defaults in brackets.
type Options struct {
	JobID        string // ["9000001"]
	Nodes        int    // [4]
	Benchmarks   int    // benchmarks, each with a results CSV [1]
	Rows         int    // rows per results CSV [3]
	FailEvery    int    // every n-th node (rank n-1, 2n-1, ...) times out in every benchmark [0: none]
	MissingEvery int    // every n-th node (rank n-2, ...) leaves no folder [0: none]
	Seed         uint64 // values are base × (1 + 2 % noise) from a PCG seeded with (Seed, rank)
}

func (o *Options) defaults() {
	if o.JobID == "" {
		o.JobID = "9000001"
	}
	if o.Nodes <= 0 {
		o.Nodes = 4
	}
	if o.Benchmarks <= 0 {
		o.Benchmarks = 1
	}
	if o.Rows <= 0 {
		o.Rows = 3
	}
}

// Host is the host name of a synthetic node.
func Host(rank int) string { return fmt.Sprintf("node%05d", rank) }

// WriteJob writes the job folder under shared/jobs and returns its path.
func WriteJob(shared string, o Options) (string, error) {
	o.defaults()
	jd := jobdir.Layout{Shared: shared}.Job(o.JobID, 0)
	dir := jd.Path
	if err := os.MkdirAll(jd.Nodes(), 0o755); err != nil {
		return "", err
	}
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	job := jobdir.Job{Job: o.JobID, World: o.Nodes, StartedAt: start, BenchctlVersion: "synthetic", Source: jobdir.SourceSlurm,
		Image: jobdir.JobImage{ID: "sha256:" + strings.Repeat("5", 64), Key: strings.Repeat("6", 64), Tag: "benchctl/synthetic:0"}}
	m := jobdir.JobManifest{Name: "synthetic", Image: jobdir.ManifestImage{Dockerfile: "Dockerfile", Tag: "benchctl/synthetic:0"},
		GPU: jobdir.ManifestGPU{Vendor: "amd", Count: "8"}}
	for r := range o.Nodes {
		job.Nodes = append(job.Nodes, Host(r))
	}
	for b := range o.Benchmarks {
		m.Benchmarks = append(m.Benchmarks, jobdir.JobBenchmark{Name: bench(b), Results: bench(b) + ".csv", Tags: []string{"synthetic"}})
	}
	if err := job.SetManifest(m); err != nil {
		return "", err
	}
	if err := jobdir.WriteJob(filepath.Join(dir, jobdir.JobFile), &job); err != nil {
		return "", err
	}
	for r := range o.Nodes {
		if o.MissingEvery > 0 && r%o.MissingEvery == o.MissingEvery-2 {
			continue
		}
		if err := writeNode(dir, o, r, start); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func bench(b int) string { return "bench" + strconv.Itoa(b) }

func writeNode(dir string, o Options, rank int, start time.Time) error {
	node := jobdir.Dir{Path: dir}.Node(rank, Host(rank))
	nd := node.Path
	failed := o.FailEvery > 0 && rank%o.FailEvery == o.FailEvery-1
	end := start.Add(5 * time.Minute)
	st := jobdir.Status{Version: 1, Job: o.JobID, Rank: rank, Host: Host(rank), World: o.Nodes, Outcome: jobdir.OutcomeSuccess,
		ImageID: "sha256:" + strings.Repeat("5", 64), StartedAt: start, FinishedAt: &end, Phases: []jobdir.PhaseStatus{}}
	for _, p := range []string{jobdir.PhaseContext, jobdir.PhaseBarrier, jobdir.PhaseImage, jobdir.PhaseRun, jobdir.PhaseResults} {
		st.Phases = append(st.Phases, jobdir.PhaseStatus{Name: p, StartedAt: start, FinishedAt: &end, Outcome: jobdir.PhaseOK})
	}
	rng := rand.New(rand.NewPCG(o.Seed, uint64(rank)))
	for b := range o.Benchmarks {
		name := bench(b)
		bs := jobdir.BenchmarkStatus{Name: name, Outcome: jobdir.OutcomeSuccess, StartedAt: start, FinishedAt: &end,
			DurationSeconds: 60 + rng.Float64()*5, Log: jobdir.LogName(name)}
		rdir := node.Results(name)
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return err
		}
		if failed {
			bs.Outcome, bs.ExitCode, bs.Error = jobdir.OutcomeTimeout, 124, "ran past its 10m0s timeout"
			bs.Diagnostics = "diagnostics/" + name
			st.Outcome, st.ExitCode, st.Error = jobdir.OutcomeTimeout, 124, "benchmark "+name+" ran past its 10m0s timeout"
			ddir := node.Diagnostics(name)
			if err := os.MkdirAll(ddir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(ddir, jobdir.DiagSummaryFile), []byte(fmt.Sprintf("benchmark %s on %d-%s: timeout after 10m0s\nlast log lines:\nstep 41\nstep 42\n", name, rank, Host(rank))), 0o644); err != nil {
				return err
			}
		} else {
			var csv strings.Builder
			csv.WriteString("model,performance,metric,status,node_rank,nnodes\n")
			for i := range o.Rows {
				v := float64(1000*(i+1)) * (1 + 0.02*rng.NormFloat64())
				fmt.Fprintf(&csv, "%s_%d,%.2f,samples_per_second,SUCCESS,%d,%d\n", name, i, v, rank, o.Nodes)
			}
			if err := os.WriteFile(filepath.Join(rdir, name+".csv"), []byte(csv.String()), 0o644); err != nil {
				return err
			}
		}
		if err := os.WriteFile(node.Log(name), []byte("starting "+name+"\nstep 42\n"), 0o644); err != nil {
			return err
		}
		st.Benchmarks = append(st.Benchmarks, bs)
	}
	if failed {
		st.ExitCode = 124
	}
	return writeJSON(filepath.Join(nd, jobdir.StatusFile), st)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

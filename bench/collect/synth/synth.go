// Package synth writes synthetic job folders in the layout `benchctl run` leaves in the
// shared directory (job.json, nodes/<rank>-<host>/status.json, results CSVs, logs,
// diagnostics), for collect's benchmarks and tests. Files are written plainly (no fsync):
// they are test data. With Options.Variants, the job is an experiment: job.json's
// manifest.experiment holds the variants, and every node runs every trial of the plan, each
// with its own record in the node's trial log and its own files (jobdir.TrialRunName).
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
	"github.com/benchctl/benchctl/manifest"
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
	// Variants makes the job an experiment of that many variants (one parameter, batch:
	// 1, 2, ...; every variant on every node), each run Trials times after Warmup warmups,
	// interleaved [0: no experiment; Trials 1].
	Variants int
	Trials   int
	Warmup   int
	// FailTrialEvery makes every n-th trial of the plan (seq n, 2n, ...) fail: its node of
	// rank seq % Nodes times out in it, so the trial counts as failed [0: none]. (FailEvery's
	// nodes fail every trial, and with them every trial of the job.)
	FailTrialEvery int
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
	if o.Variants > 0 && o.Trials <= 0 {
		o.Trials = 1
	}
}

// Experiment is the experiment of a job written with o (nil without Variants): the
// variants as job.json records them, and the plan every node walks.
func (o Options) Experiment() (*jobdir.JobExperiment, []manifest.Trial) {
	o.defaults()
	if o.Variants <= 0 {
		return nil, nil
	}
	je := &jobdir.JobExperiment{Params: []string{"batch"}, Repeat: o.Trials, Warmup: o.Warmup, Order: manifest.OrderInterleave}
	x := &manifest.Experiment{Repeat: o.Trials, Warmup: o.Warmup, Order: manifest.OrderInterleave}
	for v := range o.Variants {
		batch := strconv.Itoa(v + 1)
		je.Variants = append(je.Variants, jobdir.JobVariant{ID: "batch=" + batch, Params: []jobdir.JobParam{{Name: "batch", Value: batch}}})
		x.Variants = append(x.Variants, manifest.Variant{ID: "batch=" + batch})
	}
	return je, x.Plan(0)
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
	m.Experiment, _ = o.Experiment()
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
	_, plan := o.Experiment()
	if plan == nil {
		plan = []manifest.Trial{{}} // one run of each benchmark, no trial
	}
	var trialLog []byte // a trial run's record is a line of the node's trial log, as the runner writes it
	for _, t := range plan {
		fails := failed || (o.FailTrialEvery > 0 && t.Seq > 0 && t.Seq%o.FailTrialEvery == 0 && rank == t.Seq%o.Nodes)
		for b := range o.Benchmarks {
			bs, err := writeRun(node, o, rank, bench(b), t, fails, start, end, rng)
			if err != nil {
				return err
			}
			if fails {
				st.Outcome, st.ExitCode, st.Error = jobdir.OutcomeTimeout, 124, "benchmark "+bs.RunName()+" ran past its 10m0s timeout"
			}
			if bs.Trial > 0 {
				line, err := json.Marshal(bs)
				if err != nil {
					return err
				}
				trialLog = append(append(trialLog, line...), '\n')
				st.Trials++
				continue
			}
			st.Benchmarks = append(st.Benchmarks, bs)
		}
	}
	if st.Outcome != jobdir.OutcomeSuccess {
		st.ExitCode = 124
	}
	if len(trialLog) > 0 {
		if err := os.WriteFile(node.TrialLog(), trialLog, 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(nd, jobdir.StatusFile), st)
}

// writeRun writes one run of a benchmark on a node (a trial's run when t.Seq > 0): its
// results CSV, or its diagnostics when failed, and its log; and returns its record.
func writeRun(node jobdir.NodeDir, o Options, rank int, name string, t manifest.Trial, failed bool, start, end time.Time, rng *rand.Rand) (jobdir.BenchmarkStatus, error) {
	run, scale := name, 1.0
	if t.Seq > 0 {
		run, scale = jobdir.TrialRunName(name, t.Seq), float64(t.Variant+1)
	}
	bs := jobdir.BenchmarkStatus{Name: name, Outcome: jobdir.OutcomeSuccess, StartedAt: start, FinishedAt: &end,
		DurationSeconds: 60 + rng.Float64()*5, Log: jobdir.LogName(run)}
	if t.Seq > 0 {
		bs.Trial, bs.Variant, bs.VariantTrial, bs.Warmup = t.Seq, "batch="+strconv.Itoa(t.Variant+1), t.N, t.Warmup
	}
	rdir := node.Results(run)
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return bs, err
	}
	if failed {
		bs.Outcome, bs.ExitCode, bs.Error = jobdir.OutcomeTimeout, 124, "ran past its 10m0s timeout"
		bs.Diagnostics = jobdir.DiagRel(run)
		ddir := node.Diagnostics(run)
		if err := os.MkdirAll(ddir, 0o755); err != nil {
			return bs, err
		}
		if err := os.WriteFile(filepath.Join(ddir, jobdir.DiagSummaryFile), []byte(fmt.Sprintf("benchmark %s on %d-%s: timeout after 10m0s\nlast log lines:\nstep 41\nstep 42\n", run, rank, Host(rank))), 0o644); err != nil {
			return bs, err
		}
	} else {
		var csv strings.Builder
		csv.WriteString("model,performance,metric,status,node_rank,nnodes\n")
		for i := range o.Rows {
			v := scale * float64(1000*(i+1)) * (1 + 0.02*rng.NormFloat64())
			fmt.Fprintf(&csv, "%s_%d,%.2f,samples_per_second,SUCCESS,%d,%d\n", name, i, v, rank, o.Nodes)
		}
		if err := os.WriteFile(filepath.Join(rdir, name+".csv"), []byte(csv.String()), 0o644); err != nil {
			return bs, err
		}
	}
	return bs, os.WriteFile(node.Log(run), []byte("starting "+run+"\nstep 42\n"), 0o644)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

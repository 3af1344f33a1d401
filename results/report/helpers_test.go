package report

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/manifest"
)

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) || strings.Contains(l, "%23") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// experimentJob writes the folder of a 3-node job whose experiment is nodes [1, 2, 3] ×
// batch [16, 32], repeat 3 after 1 warmup: every rank of a trial's variant wrote
// value(nodes, batch, trial) samples_per_second, except the trials fail says failed (no
// result). Ranks outside a variant have no record of its trials, as a run leaves them.
func experimentJob(t *testing.T, value func(nodes, batch, trial int) float64, fail func(nodes, batch, trial int) bool) jobdir.Dir {
	t.Helper()
	return experimentAttempt(t, jobdir.Layout{Shared: t.TempDir()}.Job("900", 0), value, fail, nil, nil)
}

// experimentAttempt writes one attempt's folder of experimentJob's job: only the trials
// keep says (all: nil), with job.json's trialSources.
func experimentAttempt(t *testing.T, dir jobdir.Dir, value func(nodes, batch, trial int) float64, fail func(nodes, batch, trial int) bool,
	keep func(seq int) bool, sources []jobdir.TrialSource) jobdir.Dir {
	t.Helper()
	return experimentInOrder(t, dir, value, fail, keep, sources, nil)
}

// experimentInOrder is experimentAttempt whose nodes walked the plan of order (job.json's
// trialOrder) rather than the interleaved one its experiment says; nil: the interleaved
// plan, and no trialOrder in job.json (as written before it).
func experimentInOrder(t *testing.T, dir jobdir.Dir, value func(nodes, batch, trial int) float64, fail func(nodes, batch, trial int) bool,
	keep func(seq int) bool, sources []jobdir.TrialSource, order []int) jobdir.Dir {
	t.Helper()
	hosts := []string{"h0", "h1", "h2"}
	je := &jobdir.JobExperiment{Params: []string{"batch", "nodes"}, Repeat: 3, Warmup: 1, Order: manifest.OrderInterleave}
	x := &manifest.Experiment{Repeat: 3, Warmup: 1, Order: manifest.OrderInterleave}
	for _, n := range []int{1, 2, 3} {
		for _, b := range []int{16, 32} {
			id := fmt.Sprintf("batch=%d,nodes=%d", b, n)
			je.Variants = append(je.Variants, jobdir.JobVariant{ID: id, Nodes: n,
				Params: []jobdir.JobParam{{Name: "batch", Value: strconv.Itoa(b)}, {Name: "nodes", Value: strconv.Itoa(n)}}})
			x.Variants = append(x.Variants, manifest.Variant{ID: id, Nodes: n})
		}
	}
	m := jobdir.JobManifest{Name: "exp", Benchmarks: []jobdir.JobBenchmark{{Name: "train", Results: "r.csv"}}, Experiment: je}
	j := jobdirtest.NewJob(t, dir.JobID, hosts, m)
	j.Attempt, j.TrialSources, j.TrialOrder = dir.Attempt, sources, order
	d := jobdirtest.Job(t, dir, j)
	plan := x.Plan(0)
	if order != nil {
		var err error
		if plan, err = x.PlanOf(order); err != nil {
			t.Fatal(err)
		}
	}
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for rank, host := range hosts {
		nd := d.Node(rank, host)
		st := &jobdir.Status{Version: 1, Rank: rank, Host: host, World: 3, Outcome: jobdir.OutcomeSuccess, FinishedAt: &end}
		for _, tr := range plan {
			v := je.Variants[tr.Variant]
			if rank >= v.Nodes || (keep != nil && !keep(tr.Seq)) {
				continue
			}
			batch, _ := strconv.Atoi(v.Params[0].Value)
			rec := jobdir.BenchmarkStatus{Name: "train", Outcome: jobdir.OutcomeSuccess, DurationSeconds: 1, Trial: tr.Seq, Variant: v.ID, VariantTrial: tr.N, Warmup: tr.Warmup}
			if fail(v.Nodes, batch, tr.N) {
				rec.Outcome, rec.ExitCode, rec.Error = jobdir.OutcomeFailure, 1, "exit 1"
				st.Outcome = jobdir.OutcomeFailure
			} else {
				jobdirtest.Result(t, nd, jobdir.TrialRunName("train", tr.Seq), "r.csv",
					fmt.Appendf(nil, "model,performance,metric\ntrain,%v,samples_per_second\n", value(v.Nodes, batch, tr.N)))
			}
			st.Benchmarks = append(st.Benchmarks, rec)
		}
		jobdirtest.Status(t, nd, st)
	}
	return d
}

package results

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/stats"
)

// candidate makes the public Candidate of a node's result file.
func (a *aggregator) candidate(b *benchAgg, c cand) Candidate {
	_, host, _ := jobdir.ParseNodeName(c.dir)
	pc := Candidate{Rank: int(c.rank), Host: host, Dir: dirPath(c.dir), Rows: int(c.rows), WithPerformance: int(c.withPerf),
		Numeric: int(c.numeric), Problem: c.problem, Source: "none"}
	switch c.source {
	case srcCSV:
		pc.Source, pc.File = "csv", jobdir.NodeDisplay(c.dir, jobdir.ResultsRel(b.spec.name), b.spec.results)
	case srcLog:
		pc.Source, pc.File = "log", jobdir.NodeDisplay(c.dir, jobdir.LogName(b.spec.name))
	}
	return pc
}

// finishBench picks the winner, computes the rows' statistics and the benchmark's status.
func (a *aggregator) finishBench(b *benchAgg, world int) BenchmarkSummary {
	if r := b.spec.run; r != nil && r.nodes > 0 {
		world = min(world, r.nodes) // the ranks of the trial's variant
	}
	bs := BenchmarkSummary{Name: b.spec.name, Results: b.spec.results, Skipped: b.skipped, GPUs: b.gpus, GPUsPerNode: b.gpusPerNode,
		Candidates: make([]Candidate, 0, len(b.cands)), Failed: []NodeFailure{}, Rows: []RowSummary{}, nodes: a.nodeStates(b, world)}
	if r := b.spec.run; r != nil {
		bs.Benchmark, bs.Trial, bs.VariantTrial, bs.Warmup, bs.variant = b.spec.bench, r.seq, r.n, r.warmup, r.variant
		if r.from != thisAttempt {
			bs.Attempt = &r.from
		}
		if x := a.job.Manifest.Experiment; x != nil && r.variant < len(x.Variants) {
			bs.Variant = x.Variants[r.variant].ID
		}
	}
	slices.SortFunc(b.cands, func(x, y cand) int { return cmp.Or(cmp.Compare(x.rank, y.rank), strings.Compare(x.dir, y.dir)) })
	for _, c := range b.cands {
		bs.Candidates = append(bs.Candidates, a.candidate(b, c))
	}
	bs.MoreCandidates = b.moreCands
	slices.SortFunc(b.arts, func(x, y NodeArtefacts) int {
		return cmp.Or(cmp.Compare(x.Rank, y.Rank), strings.Compare(x.Host, y.Host))
	})
	bs.Artefacts, bs.ArtefactNodesUnlisted = b.arts, b.artsUnlisted
	if a.job != nil {
		bs.Tools = a.job.Manifest.Tools
	}
	bs.Telemetry = b.tel.summary()
	if b.durN > 0 {
		bs.Durations = Durations{Nodes: b.durN, Min: b.durMin, Max: b.durMax, Mean: b.durSum / float64(b.durN)}
	}
	sortFailures(b.failed)
	for _, f := range b.failed {
		nf := f.public()
		if nf.Diagnostics != "" && !a.exists(nf.Diagnostics) {
			nf.Diagnostics = ""
		}
		if nf.Log != "" && !a.exists(nf.Log) {
			nf.Log = ""
		}
		bs.Failed = append(bs.Failed, nf)
	}
	slices.Sort(b.running)
	for _, r := range b.running {
		for _, n := range a.running {
			if n.Rank == int(r) {
				bs.Running = append(bs.Running, n)
				break
			}
		}
	}
	won := b.hasBest && b.best.withPerf > 0
	if won {
		w := a.candidate(b, b.best)
		bs.Winner = &w
		bs.WinnerWhy = a.winnerWhy(b)
		bs.table = b.bestT
	}
	failedNote := ""
	if n := CountNodes(bs.Failed); n > 0 {
		failedNote = fmt.Sprintf("%d of %d nodes failed: %s", n, world, listFailures(bs.Failed, maxListedNodes))
	}
	switch {
	case !won && b.archSkipped > 0 && b.archSkipped == b.skipped && len(bs.Failed) == 0 && len(bs.Running) == 0:
		// Every node that reported skipped it for its GPU architecture (skip_gpu_arch):
		// madengine's SKIPPED, not a failure.
		bs.Status, bs.Reason = StatusSkipped, b.skipWhy
	case !won && len(bs.Running) > 0 && len(bs.Failed) == 0:
		bs.Status, bs.Reason = StatusFailure, fmt.Sprintf("no result yet (%s still running)", Plural(len(bs.Running), "node", "nodes"))
	case !won:
		bs.Status, bs.Reason = StatusFailure, "no node produced a result"
		if failedNote != "" {
			bs.Reason += "; " + failedNote
		}
	case failedNote != "":
		bs.Status, bs.Reason = StatusFailure, failedNote
	case len(bs.Running) > 0:
		// A node still at work may yet fail: a partial result is never SUCCESS.
		bs.Status, bs.Reason = StatusFailure, fmt.Sprintf("partial: %d of %d nodes still running", len(bs.Running), world)
	default:
		bs.Status = StatusSuccess
	}
	if !won {
		st := StatusFailure
		if bs.Status == StatusSkipped {
			st = StatusSkipped
		}
		bs.Rows = append(bs.Rows, RowSummary{Model: b.spec.benchName(), Status: st, Reason: bs.Reason})
		return bs
	}
	t := b.bestT
	k := newKeyer(t, b.spec.benchName(), a.keyCols)
	perf, status := t.Col(ColPerformance), t.Col(ColStatus)
	keys := make(map[string]bool, len(t.Rows))
	for r := range t.Rows {
		key, occ := k.key(t, r)
		keys[key] = true
		row := RowSummary{Model: k.rowModel(t, r), Metric: t.Get(r, k.metric), Identity: k.identity(t, r),
			Performance: t.Rows[r][perf], Status: StatusSuccess}
		if occ > 1 {
			row.Occurrence = occ
		}
		if acc := b.accs[key]; acc != nil {
			row.Stats = acc.Stats()
		}
		v, numeric := stats.ParsePerformance(row.Performance)
		if numeric {
			row.Value = &v
		}
		switch rowStatus := strings.ToUpper(strings.TrimSpace(t.Get(r, status))); {
		case bs.Status == StatusFailure:
			row.Status, row.Reason = StatusFailure, bs.Reason
		case !HasPerformance(row.Performance):
			row.Status, row.Reason = StatusFailure, "no performance value in the winner's CSV"
		case !numeric:
			row.Status, row.Reason = StatusFailure, fmt.Sprintf("performance %q is not a number", row.Performance)
		case rowStatus == "FAILURE" || rowStatus == "FAILED":
			row.Status, row.Reason = StatusFailure, "the benchmark marked this row "+rowStatus
		}
		row.PerfPerWatt = perfPerWatt(bs.Telemetry, row, a.metricRules())
		bs.Rows = append(bs.Rows, row)
	}
	var other []string
	for key := range b.accs {
		if !keys[key] {
			other = append(other, readableKey(key))
		}
	}
	slices.Sort(other)
	if len(other) > maxListedNodes {
		other = append(other[:maxListedNodes], fmt.Sprintf("and %d more", len(other)-maxListedNodes))
	}
	bs.OtherKeys = other
	if len(other) > 0 {
		a.problem("benchmark %s: other nodes reported rows the winner's CSV does not have (%s); their CSVs differ in columns or key values, so those rows are in no statistic (summary.json otherKeys)",
			b.spec.name, strings.Join(other, "; "))
	}
	return bs
}

// exists reports whether a path relative to the job folder exists.
func (a *aggregator) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(a.dir.Path, filepath.FromSlash(rel)))
	return !errors.Is(err, fs.ErrNotExist)
}

// winnerWhy says why the winner won, against the runner-up.
func (a *aggregator) winnerWhy(b *benchAgg) string {
	w := b.best
	var second *cand
	for i := range b.cands {
		c := &b.cands[i]
		if c.rank == w.rank && c.dir == w.dir {
			continue
		}
		if second == nil || c.better(*second) {
			second = c
		}
	}
	why := fmt.Sprintf("most rows with a performance value (%d of %d rows)", w.withPerf, w.rows)
	if w.numeric != w.withPerf {
		why = fmt.Sprintf("most rows with a numeric performance value (%d; %d with a value, of %d rows)", w.numeric, w.withPerf, w.rows)
	}
	switch {
	case second == nil:
		return why + "; the only node with a result"
	case second.numeric != w.numeric && second.withPerf >= w.withPerf:
		return why + fmt.Sprintf("; %s has %d rows with a value but only %d numeric", second.dir, second.withPerf, second.numeric)
	case second.withPerf == w.withPerf && second.rows == w.rows:
		return why + fmt.Sprintf("; tied with %s on rows, lowest rank wins", second.dir)
	case second.withPerf == w.withPerf:
		return why + fmt.Sprintf("; tied with %s on rows with a performance value, more rows in all (%d against %d)", second.dir, w.rows, second.rows)
	}
	return why + fmt.Sprintf("; next best %s with %d", second.dir, second.withPerf)
}

// listFailures names up to n failed nodes (or runs of missing nodes) with short reasons;
// "and 7 more" counts the nodes left out.
func listFailures(f []NodeFailure, n int) string {
	parts := make([]string, 0, min(n, len(f))+1)
	for i, x := range f {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", CountNodes(f[n:])))
			break
		}
		parts = append(parts, x.Label()+" ("+shorten(x.Reason, 120)+")")
	}
	return strings.Join(parts, "; ")
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

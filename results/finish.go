package results

import (
	"cmp"
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// maxListedNodes is how many failed nodes a reason or a perf.csv cell names.
const maxListedNodes = 10

// finish turns the aggregation into a Summary.
func (a *aggregator) finish() *Summary {
	now := time.Now
	if a.opts.Now != nil {
		now = a.opts.Now
	}
	s := &Summary{Version: SummaryVersion, Job: a.dir.JobID, Attempt: a.dir.Attempt, Attempts: a.dir.Attempts,
		CollectedAt: now().UTC(), CollectedBy: a.opts.CollectedBy, Partial: a.opts.Partial,
		job: a.job, path: a.dir.Path, NodeFailures: []NodeFailure{}, Benchmarks: []BenchmarkSummary{}}
	if s.Attempts == nil {
		s.Attempts = []int{a.dir.Attempt}
	}
	if a.opts.Scheduler.Known {
		s.Scheduler = a.opts.Scheduler.State
	}
	world := a.worldSize()
	if j := a.job; j != nil {
		s.Name, s.Deployment, s.BenchctlVersion, s.Image, s.Images = j.Manifest.Name, j.Deployment(), j.BenchctlVersion, j.Image, j.Images
		if !j.StartedAt.IsZero() {
			t := j.StartedAt
			s.StartedAt = &t
		}
	} else {
		s.Deployment = (&jobdir.Job{Job: a.dir.JobID}).Deployment()
	}
	if s.Image.ID == "" {
		s.Image.ID, s.Image.Key = a.commonImage(), a.imageKey
	}
	s.GPUArch, s.GPUName = sortedKeys(a.archs), sortedKeys(a.gpuNames)
	if len(a.images) > 1 {
		a.problem("the nodes ran different images: %s", a.imageCounts())
	}
	a.addMissing(world)
	for _, r := range a.dupRanks {
		a.problem("more than one folder for rank %d", r)
	}
	s.Nodes = a.counts
	s.Nodes.Expected = world
	sortFailures(a.failures)
	for _, f := range a.failures {
		s.NodeFailures = append(s.NodeFailures, f.public())
	}
	slices.SortFunc(a.running, func(x, y NodeRef) int { return cmp.Or(cmp.Compare(x.Rank, y.Rank), strings.Compare(x.Dir, y.Dir)) })
	s.Running = a.running
	benches := slices.Clone(a.benches)
	if a.job == nil {
		slices.SortFunc(benches, func(x, y *benchAgg) int { return strings.Compare(x.spec.name, y.spec.name) })
	}
	for _, b := range benches {
		s.Benchmarks = append(s.Benchmarks, a.finishBench(b, world))
	}
	if len(s.Benchmarks) == 0 {
		a.problem("no benchmarks: job.json lists none and no node recorded any")
	}
	if a.job != nil && a.job.Manifest.Experiment != nil {
		s.Experiment = buildExperiment(a.job, s)
	}
	s.NodeRecords, s.machines = a.records.finish(a.hostOf), a.records.machines
	slices.Sort(a.problems)
	s.Problems = append([]string{}, a.problems...)
	s.Status = StatusSuccess
	if len(s.NodeFailures) > 0 || len(s.Benchmarks) == 0 || len(s.Running) > 0 {
		s.Status = StatusFailure // a node still at work may yet fail: never SUCCESS
	}
	for _, b := range s.Benchmarks {
		if b.Status == StatusFailure {
			s.Status = StatusFailure
		}
		for _, r := range b.Rows {
			if r.Status == StatusFailure {
				s.Status = StatusFailure
			}
		}
	}
	return s
}

// maxUnreported is how many more nodes than there are node folders a count may include
// without a host list to back them: the gaps between folders' ranks (nodes that never
// started) and a world the status files claim.
const maxUnreported = 256

// worldSize is the number of nodes the job is counted with. A claim — job.json's world,
// or the status files' — is checked against what the folder shows before anything is
// counted per rank, so that a damaged or hostile claim ("world": 2000000000), or one stray
// folder (nodes/4000000-x), cannot make collect allocate a record per claimed rank. The
// rule:
//
//   - the folders show their extent: the highest rank seen plus one, leaving out stray
//     ranks more than maxUnreported beyond the number of node folders (so one folder
//     nodes/4000000-x does not invent four million missing nodes);
//   - job.json's world is used when its host list (rank 0 writes both from the same node
//     context) or the folders' extent backs it; a larger claim is reported, and the larger
//     of the two is counted;
//   - without job.json, the status files' world is used when they agree and it is at
//     most maxUnreported above the number of node folders; otherwise the extent counts.
//
// Node folders beyond the count are reported, never counted as missing nodes.
func (a *aggregator) worldSize() int {
	seen := a.extent()
	if j := a.job; j != nil {
		claimed, listed := j.World, len(j.Nodes)
		world := max(claimed, listed)
		if backed := max(listed, seen); claimed > backed {
			a.problem("job.json says the job has %d nodes, but it lists %d hosts and the node folders go up to rank %d (%s); counting %d nodes",
				claimed, listed, a.maxRank, Plural(a.folders, "folder", "folders"), backed)
			world = backed
		}
		if world == 0 {
			return seen
		}
		if a.maxRank >= world {
			a.problem("node folders go up to rank %d, but job.json says the job has %d nodes", a.maxRank, world)
		}
		return world
	}
	switch {
	case a.world == 0:
		return seen
	case a.minWorld != a.world:
		a.problem("the status files disagree on the job's size (%d to %d nodes); counting %d, the node folders' extent",
			a.minWorld, a.world, seen)
		return seen
	case a.world > max(seen, a.folders+maxUnreported):
		a.problem("the status files say the job has %d nodes, but the node folders go up to rank %d (%s); counting %d nodes",
			a.world, a.maxRank, Plural(a.folders, "folder", "folders"), seen)
		return seen
	case a.maxRank >= a.world:
		// A stray high-rank folder must not invent missing nodes.
		a.problem("node folders go up to rank %d, but the status files say the job has %d nodes; folders beyond that are ignored for the node count", a.maxRank, a.world)
	}
	return a.world
}

// extent is how many nodes the node folders show: the highest rank plus one. Ranks more
// than maxUnreported beyond the number of folders are strays (nodes/4000000-x): the
// extent then ends after the highest rank below that bound.
func (a *aggregator) extent() int {
	limit := a.folders + maxUnreported
	if a.folders == 0 {
		return 0
	}
	if a.maxRank < limit {
		return a.maxRank + 1
	}
	n := 0
	for r := range a.seenRanks() {
		if r >= limit {
			break
		}
		n = r + 1
	}
	return n
}

// maxMissingEach is how many ranks without a folder are recorded one by one, each with
// its host. Beyond it, each run of consecutive such ranks is one record ("ranks
// 2-1999999"), so that a world of millions backed by job.json's host list costs a record
// per gap between node folders, not one per rank and benchmark.
const maxMissingEach = 256

// rankRun is the ranks first to last.
type rankRun struct{ first, last int }

// addMissing records every rank below world without a folder as a failed node: one record
// per rank when there are at most maxMissingEach, else one per run of them.
func (a *aggregator) addMissing(world int) {
	runs := a.missingRuns(world)
	total := 0
	for _, r := range runs {
		total += r.last - r.first + 1
	}
	for _, run := range runs {
		n := run.last - run.first + 1
		a.counts.Missing += n
		a.counts.Failed += n
		if n > 1 && total > maxMissingEach {
			a.addMissingRec(failRec{rank: int32(run.first), last: int32(run.last), outcome: "missing",
				reason: fmt.Sprintf("no status: %d nodes never reported (no folders nodes/%d-* to nodes/%d-*)", n, run.first, run.last)})
			continue
		}
		for rank := run.first; rank <= run.last; rank++ {
			host := "unknown"
			if a.job != nil && rank < len(a.job.Nodes) && a.job.Nodes[rank] != "" {
				host = a.job.Nodes[rank]
			}
			reason := fmt.Sprintf("no status: node never reported (no folder nodes/%d-*)", rank)
			if name, ok := a.strays[rank]; ok {
				reason = fmt.Sprintf("no status: node never reported (nodes/%s is not counted: see the problems)", name)
			}
			a.addMissingRec(failRec{rank: int32(rank), host: host, outcome: "missing", reason: reason})
		}
	}
	// Without job.json, a node may not mention a benchmark that others ran.
	for _, b := range a.benches {
		for rank := range a.seenRanks() {
			if b.stateOf(rank) == StateNone && b.spec.runsOn(rank) {
				b.setState(rank, StateFailed)
				b.failed = append(b.failed, failRec{rank: int32(rank), host: a.hostOf(rank), outcome: jobdir.OutcomeFailure,
					reason: "no record of this benchmark on this node"})
			}
		}
	}
}

// addMissingRec records a node (or a run of them) without a folder, for the job and for
// every benchmark.
func (a *aggregator) addMissingRec(f failRec) {
	a.failures = append(a.failures, f)
	for _, b := range a.benches {
		if b.spec.runsOn(int(f.rank)) { // not a trial of a variant without the node
			b.failed = append(b.failed, f)
		}
	}
}

// missingRuns is the runs of ranks below world without a folder, in order: at most one
// more than there are folders.
func (a *aggregator) missingRuns(world int) []rankRun {
	var runs []rankRun
	next := 0 // the lowest rank not yet accounted for
	for r := range a.seenRanks() {
		if r >= world {
			break
		}
		if r > next {
			runs = append(runs, rankRun{next, r - 1})
		}
		next = r + 1
	}
	if next < world {
		runs = append(runs, rankRun{next, world - 1})
	}
	return runs
}

// seenRanks yields the ranks that have a folder, in order.
func (a *aggregator) seenRanks() iter.Seq[int] {
	return func(yield func(int) bool) {
		for w, word := range a.seen {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				if !yield(w*64 + b) {
					return
				}
				word &^= 1 << b
			}
		}
	}
}

func (a *aggregator) hostOf(rank int) string {
	if a.job != nil && rank < len(a.job.Nodes) {
		return a.job.Nodes[rank]
	}
	for _, b := range a.benches {
		for _, c := range b.cands {
			if int(c.rank) == rank {
				_, h, _ := jobdir.ParseNodeName(c.dir)
				return h
			}
		}
	}
	return "unknown"
}

func (a *aggregator) commonImage() string {
	best, n := "", 0
	for id, c := range a.images {
		if c > n || (c == n && id < best) {
			best, n = id, c
		}
	}
	return best
}

func (a *aggregator) imageCounts() string {
	var parts []string
	for id, c := range a.images {
		parts = append(parts, fmt.Sprintf("%s on %d nodes", id, c))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func (f failRec) public() NodeFailure {
	nf := NodeFailure{Rank: int(f.rank), Host: f.host, Dir: dirPath(f.dir), Outcome: f.outcome, ExitCode: int(f.exit),
		Reason: f.reason, Log: f.log, Diagnostics: f.diag}
	if f.last > f.rank {
		nf.LastRank = int(f.last)
	}
	return nf
}

func dirPath(dir string) string {
	if dir == "" {
		return ""
	}
	return jobdir.NodeDisplay(dir)
}

// sortedKeys is m's keys, sorted and comma-separated ("" for none).
func sortedKeys(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

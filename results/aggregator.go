package results

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/stats"
)

// Per-node states of a benchmark, one byte per rank (for the report's node strip).
const (
	StateNone    byte = iota // no record (yet)
	StateOK                  // the benchmark succeeded on the node
	StateFailed              // failed, timed out, cancelled, or the node failed
	StateRunning             // the node is still running (--partial)
	StateSkipped             // the node skipped it
	StateMissing             // the node never reported (not stored per benchmark: see nodeStates)
)

// NumStates is how many node states there are.
const NumStates = int(StateMissing) + 1

// MaxStripNodes is how many nodes the report's node strip draws one cell each for; more
// get a stacked bar, and their states are counted, not kept per rank.
const MaxStripNodes = 512

// rankLimit bounds ranks, so that a stray folder name cannot make the per-rank arrays huge.
const rankLimit = 1 << 22

// aggregator holds the state of one Aggregate call. add is called from one goroutine.
type aggregator struct {
	dir     jobdir.Dir
	opts    AggregateOptions
	keyCols []string
	job     *jobdir.Job // nil when job.json is unreadable
	specs   []benchSpec
	benches []*benchAgg
	byName  map[string]*benchAgg

	seen     []uint64 // bit per rank
	folders  int      // distinct ranks seen
	dupRanks []int
	maxRank  int
	counts   NodeCounts
	failures []failRec
	running  []NodeRef
	problems []string
	images   map[string]int // image id -> nodes (bounded)
	imageKey string
	world    int            // largest world a status claimed
	minWorld int            // smallest world a status claimed (0: none did)
	archs    map[string]int // GPU architectures the nodes reported, and how many of each
	gpuNames map[string]int // GPU product names the nodes reported (bounded like archs)
	statuses int            // status files read
	strays   map[int]string // a folder of nodes/ not counted, by the rank its name claims (bounded)
	records  recordAgg      // the nodes' node.json, compared
}

// benchAgg is one benchmark's running aggregation.
type benchAgg struct {
	spec      benchSpec
	cands     []cand
	moreCands int // a trial's run: the candidates not kept (trialCands)
	best      cand
	bestT     *Table
	hasBest   bool
	accs      map[string]*stats.Accumulator
	state     []byte         // by rank, for ranks below denseRanks
	far       map[int32]byte // ranks from denseRanks up (a stray folder's must not cost a byte per rank)
	failed    []failRec
	running   []int32
	skipped   int
	// archSkipped counts the nodes that skipped it for their GPU architecture
	// (skip_gpu_arch); skipWhy is the first such node's reason.
	archSkipped int
	skipWhy     string
	// gpus is the GPUs the benchmark's containers got, summed over the nodes; gpusPerNode
	// the most on one node.
	gpus, gpusPerNode int
	tel               *telAgg // nil until a node has telemetry of it
	arts              []NodeArtefacts
	artsUnlisted      int // nodes from rank MaxArtefactNodes on, whose artefacts are not listed
	durN              int
	durMin            float64
	durMax            float64
	durSum            float64
}

// cand is a compact Candidate.
type cand struct {
	dir      string
	problem  string
	rank     int32
	rows     int32
	withPerf int32
	numeric  int32 // rows whose performance is a number
	source   uint8
}

// better is the best-CSV order: more rows with a numeric performance (a node that wrote
// "N/A" must not beat one that wrote numbers), then more rows with a performance, then more
// rows, then the lower rank (then the folder name, for duplicate ranks).
func (c cand) better(o cand) bool {
	switch {
	case c.numeric != o.numeric:
		return c.numeric > o.numeric
	case c.withPerf != o.withPerf:
		return c.withPerf > o.withPerf
	case c.rows != o.rows:
		return c.rows > o.rows
	case c.rank != o.rank:
		return c.rank < o.rank
	}
	return c.dir < o.dir
}

// failRec is a compact NodeFailure. A record of ranks that left no folder may stand for
// a run of them: ranks rank to last (last is 0 for one node).
type failRec struct {
	dir, host, outcome, reason, log, diag string
	rank, last, exit                      int32
}

func newAggregator(dir jobdir.Dir, opts AggregateOptions) *aggregator {
	a := &aggregator{dir: dir, opts: opts, byName: map[string]*benchAgg{}, images: map[string]int{}}
	a.keyCols = opts.KeyColumns
	if a.keyCols == nil {
		a.keyCols = DefaultKeyColumns()
	}
	return a
}

// readJob reads job.json. A missing or broken one is a problem, not an error: the status
// files still say a lot.
func (a *aggregator) readJob() {
	j, err := jobdir.ReadJob(a.dir.JobFile())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			a.problem("no job.json: rank 0 never started, or the folder is not a job folder; benchmarks and node count are taken from the node folders")
		} else {
			a.problem("job.json unreadable (%s); benchmarks and node count are taken from the node folders",
				strings.ReplaceAll(err.Error(), a.dir.Path+string(filepath.Separator), ""))
		}
		return
	}
	a.job = j
	a.specs = []benchSpec{}
	if j.Manifest.Experiment != nil {
		if err := checkExperiment(j.Manifest.Experiment); err != nil {
			// A job.json no benchctl wrote: its trials cannot be told apart.
			a.problem("job.json: the experiment is not one benchctl runs (%v); its trials are collected as benchmarks of their own", err)
			a.job.Manifest.Experiment = nil
			a.specs = nil
			return
		}
		a.experimentSpecs(j)
		return
	}
	for _, b := range j.Manifest.Benchmarks {
		if b.Name == "" || a.byName[b.Name] != nil || (len(j.Benchmarks) > 0 && !slices.Contains(j.Benchmarks, b.Name)) {
			continue // not run (--benchmarks chose others)
		}
		if !filepath.IsLocal(b.Name) || (b.Results != "" && !filepath.IsLocal(b.Results)) {
			a.problem("job.json: benchmark %q with results %q names a path outside its folder; ignored", b.Name, b.Results)
			continue
		}
		sp := benchSpec{name: b.Name, results: b.Results}
		a.specs = append(a.specs, sp)
		a.bench(sp)
	}
}

func (a *aggregator) problem(format string, args ...any) {
	if len(a.problems) < 1000 {
		a.problems = append(a.problems, fmt.Sprintf(format, args...))
	}
}

func (a *aggregator) bench(sp benchSpec) *benchAgg {
	if b := a.byName[sp.name]; b != nil {
		return b
	}
	b := &benchAgg{spec: sp, accs: map[string]*stats.Accumulator{}}
	a.benches = append(a.benches, b)
	a.byName[sp.name] = b
	return b
}

// markSeen records a rank; it reports false for a rank already seen.
func (a *aggregator) markSeen(rank int) bool {
	w := rank / 64
	for len(a.seen) <= w {
		a.seen = append(a.seen, 0)
	}
	bit := uint64(1) << (rank % 64)
	if a.seen[w]&bit != 0 {
		return false
	}
	a.seen[w] |= bit
	a.folders++
	return true
}

func (a *aggregator) wasSeen(rank int) bool {
	w := rank / 64
	return w < len(a.seen) && a.seen[w]&(uint64(1)<<(rank%64)) != 0
}

// add merges one node folder and forgets it, except for the best CSV per benchmark.
func (a *aggregator) add(nd *nodeData) {
	if nd.rank < 0 {
		a.problem("unexpected folder %s (node folders are named <rank>-<host>)", jobdir.NodeDisplay(nd.dir))
		return
	}
	if nd.rank >= rankLimit {
		a.problem("%s: rank %d is beyond what benchctl collects (%d); ignored", jobdir.NodeDisplay(nd.dir), nd.rank, rankLimit)
		return
	}
	if !a.markSeen(nd.rank) {
		a.dupRanks = append(a.dupRanks, nd.rank)
	}
	a.maxRank = max(a.maxRank, nd.rank)
	if nd.trialLogErr != nil {
		a.problem("%s", relErr(nd.trialLogErr, a.dir.NodeNamed(nd.dir).Path, nd.dir))
	}
	kind, nf := a.classify(nd)
	switch kind {
	case nodeOK:
		a.counts.Reported++
		a.counts.Succeeded++
	case nodeRunning:
		a.counts.Reported++
		a.counts.Running++
		a.running = append(a.running, NodeRef{Rank: nd.rank, Host: nd.host, Dir: jobdir.NodeDisplay(nd.dir)})
	case nodeFailed:
		a.counts.Reported++
		a.counts.Failed++
		a.failures = append(a.failures, nf)
	case nodeNoStatus:
		a.counts.Failed++
		a.failures = append(a.failures, nf)
	}
	if st := nd.status; st != nil {
		if st.World > 0 {
			if a.minWorld == 0 || st.World < a.minWorld {
				a.minWorld = st.World
			}
			a.world = max(a.world, st.World)
		}
		a.statuses++
		countBounded(&a.archs, st.GPUArch)
		countBounded(&a.gpuNames, st.GPUName)
		if st.Rank != nd.rank || (st.Host != "" && st.Host != nd.host) {
			a.problem("%s says rank %d host %q", jobdir.NodeDisplay(nd.dir, jobdir.StatusFile), st.Rank, st.Host)
		}
		if st.ImageID != "" {
			if _, ok := a.images[st.ImageID]; ok || len(a.images) < 16 {
				a.images[st.ImageID]++
			}
			if a.imageKey == "" {
				a.imageKey = st.ImageKey
			}
		}
	}
	a.records.add(nd)
	for i := range nd.benches {
		a.addBench(nd, kind, nf, &nd.benches[i])
	}
}

func (a *aggregator) addBench(nd *nodeData, kind int, nf failRec, nb *nodeBench) {
	if nb.idle {
		return
	}
	b := a.bench(nb.spec)
	if b.tel == nil {
		b.tel = &telAgg{trial: b.spec.run != nil}
	}
	if nb.tel != nil {
		b.tel.add(nd.rank, nd.host, nb.tel)
	} else {
		b.tel.t.NodesMissing++ // ran it (or was to), left no summary
	}
	if nb.arts != nil {
		b.arts = append(b.arts, *nb.arts)
	} else if nd.rank >= MaxArtefactNodes {
		b.artsUnlisted++
	}
	c := cand{dir: nd.dir, problem: nb.problem, rank: int32(nd.rank), source: nb.source}
	if t := nb.table; t != nil {
		c.rows = int32(len(t.Rows))
		perf := t.Col(ColPerformance)
		k := newKeyer(t, b.spec.benchName(), a.keyCols)
		for r := range t.Rows {
			raw := t.Rows[r][perf]
			if !HasPerformance(raw) {
				continue
			}
			c.withPerf++
			v, ok := stats.ParsePerformance(raw)
			if !ok {
				if c.problem == "" {
					c.problem = fmt.Sprintf("row %d: performance %q is not a number", r+1, raw)
				}
				continue
			}
			c.numeric++
			if b.spec.run != nil {
				// A trial's figure is the picked node's; its spread over the nodes is not
				// kept (memory would grow with nodes × trials).
				continue
			}
			key, _ := k.key(t, r)
			acc := b.accs[key]
			if acc == nil {
				acc = &stats.Accumulator{}
				b.accs[key] = acc
			}
			acc.Add(nd.rank, v, raw)
		}
		if !b.hasBest || c.better(b.best) {
			b.best, b.bestT, b.hasBest = c, t, true
		}
	}
	b.cands = append(b.cands, c)
	if b.spec.run != nil && len(b.cands) > trialCands {
		// A trial's run keeps its best candidates (the picked one and the runner-up, for
		// why it was picked) and those with a problem to report, and counts the rest.
		slices.SortStableFunc(b.cands, func(x, y cand) int {
			switch {
			case x.better(y):
				return -1
			case y.better(x):
				return 1
			}
			return 0
		})
		kept := b.cands[:trialCands]
		for _, c := range b.cands[trialCands:] {
			if c.problem != "" && len(kept) < maxTrialProblemCands {
				kept = append(kept, c)
				continue
			}
			b.moreCands++
		}
		b.cands = kept
	}

	bs := nd.record(b.spec.name)
	if bs != nil && bs.DurationSeconds > 0 {
		d := bs.DurationSeconds
		if b.durN == 0 || d < b.durMin {
			b.durMin = d
		}
		b.durMax = max(b.durMax, d)
		b.durSum += d
		b.durN++
	}
	if bs != nil && bs.GPUs > 0 {
		b.gpus += bs.GPUs
		b.gpusPerNode = max(b.gpusPerNode, bs.GPUs)
	}
	state, f := benchState(kind, nf, bs)
	switch state {
	case StateSkipped:
		b.skipped++
		if bs != nil && strings.HasPrefix(bs.Error, jobdir.SkipArchPrefix) {
			b.archSkipped++
			if b.skipWhy == "" {
				b.skipWhy = bs.Error
			}
		}
	case StateRunning:
		b.running = append(b.running, int32(nd.rank))
	case StateFailed:
		f.log, f.diag = failureLinks(nd.dir, b.spec.name, bs)
		b.failed = append(b.failed, f)
	}
	b.setState(nd.rank, state)
}

// trialCands is how many of a trial's run's candidates are kept whatever they say;
// maxTrialProblemCands bounds those kept for a problem they report.
const (
	trialCands           = 2
	maxTrialProblemCands = 16
)

// denseRanks is how many ranks a benchmark's states are kept for one byte each; the
// states of higher ranks go into a map, so that one folder named nodes/4000000-x costs a
// map entry per benchmark, not four megabytes.
const denseRanks = 1 << 16

func (b *benchAgg) setState(rank int, s byte) {
	old := b.stateOf(rank)
	if old != StateNone && s != StateFailed {
		return
	}
	if rank >= denseRanks {
		if b.far == nil {
			b.far = map[int32]byte{}
		}
		b.far[int32(rank)] = s
		return
	}
	for len(b.state) <= rank {
		b.state = append(b.state, StateNone)
	}
	b.state[rank] = s
}

func (b *benchAgg) stateOf(rank int) byte {
	if rank < len(b.state) {
		return b.state[rank]
	}
	return b.far[int32(rank)] // StateNone when absent
}

// NodeStates is a benchmark's nodes by state (for the report's node strip): how many are
// in each state, and the state of each rank when there are at most MaxStripNodes.
type NodeStates struct {
	N      int // ranks 0 to n-1
	Counts [NumStates]int
	Cells  []byte // by rank; nil above MaxStripNodes
}

// nodeStates is b's states for ranks 0 to world-1 (world is bounded by what the folder
// shows: see worldSize) and any dense rank beyond. A rank below world without a folder is
// StateMissing; those are counted, not stored, so that a world of millions backed by its host
// list costs nothing per rank here.
func (a *aggregator) nodeStates(b *benchAgg, world int) NodeStates {
	ns := NodeStates{N: max(world, len(b.state))}
	if ns.N <= MaxStripNodes {
		ns.Cells = make([]byte, ns.N)
		for r := range ns.N {
			x := b.stateOf(r)
			if x == StateNone && r < world && !a.wasSeen(r) {
				x = StateMissing
			}
			ns.Cells[r] = x
			ns.Counts[x]++
		}
		return ns
	}
	known := 0
	for _, x := range b.state {
		if x != StateNone {
			ns.Counts[x]++
			known++
		}
	}
	for r, x := range b.far {
		if int(r) < ns.N && x != StateNone {
			ns.Counts[x]++
			known++
		}
	}
	// addMissing counted the ranks below world without a folder; every rank with a folder
	// has a state by then.
	ns.Counts[StateMissing] = a.counts.Missing
	ns.Counts[StateNone] = ns.N - known - a.counts.Missing
	return ns
}

func sortFailures(f []failRec) {
	sort.Slice(f, func(i, j int) bool {
		if f[i].rank != f[j].rank {
			return f[i].rank < f[j].rank
		}
		return f[i].dir < f[j].dir
	})
}

// countBounded counts k in *m (made on first use), which holds at most 16 distinct keys:
// a job's GPU architectures and product names, where more would be a folder gone wrong.
func countBounded(m *map[string]int, k string) {
	if k == "" || ((*m)[k] == 0 && len(*m) >= 16) {
		return
	}
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

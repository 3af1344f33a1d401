package results

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

// benchSpec is what the aggregator knows about a benchmark before reading nodes.
type benchSpec struct {
	name    string
	results string // CSV file name in the benchmark's output folder; "" reads the log
	// In a job with an experiment, a spec is one trial's run of a benchmark: name is its
	// run name (jobdir.TrialRunName), bench the benchmark's; run tells the trial apart.
	bench string
	run   *trialSpec
}

// trialSpec is the trial a run belongs to.
type trialSpec struct {
	seq, variant, n int // the trial's place in the plan, its variant's index, its number in the variant
	warmup          bool
	nodes           int // the variant's node count (ranks 0..nodes-1); 0: every node
	// from is the earlier attempt whose folder holds the trial (a requeued job resumed
	// after it); -1: this attempt ran it.
	from int
}

// thisAttempt is the from of the runs an attempt's own folder holds.
const thisAttempt = -1

// inAttempt reports whether the spec's run is in the folder of attempt from (thisAttempt:
// the one collected).
func (sp benchSpec) inAttempt(from int) bool {
	if sp.run == nil {
		return from == thisAttempt
	}
	return sp.run.from == from
}

// benchName is the benchmark's own name (a trial's run is named after it and the trial).
func (sp benchSpec) benchName() string {
	if sp.bench != "" {
		return sp.bench
	}
	return sp.name
}

// runsOn reports whether rank takes part in the spec's run: every rank, except in a trial of
// a variant of fewer nodes than the job.
func (sp benchSpec) runsOn(rank int) bool {
	return sp.run == nil || sp.run.nodes == 0 || rank < sp.run.nodes
}

// Sources of a node's result for a benchmark.
const (
	srcNone uint8 = iota
	srcCSV
	srcLog
)

// nodeData is everything read from one node folder. It lives only until it is merged.
type nodeData struct {
	dir       string // folder name, "<rank>-<host>"
	rank      int
	host      string
	status    *jobdir.Status
	statusErr error // nil with a nil status: no status.json at all
	// trialLogErr is a damaged trial log (trials.jsonl): its records before the damage were read.
	trialLogErr error
	benches     []nodeBench
	records     map[string]*jobdir.BenchmarkStatus // the status's records by run name (the first of a name)
	nodeRec     *jobdir.NodeRecord                 // node.json; nil when missing or unreadable (recordErr)
	recordErr   error
}

// record is the node's status record of a run (a benchmark, or a trial's run of one), or
// nil: looked up in an index built once per node, not by a scan per run (a node of 400
// trial runs would make that 160,000 comparisons).
func (nd *nodeData) record(name string) *jobdir.BenchmarkStatus {
	if nd.status == nil {
		return nil
	}
	if nd.records == nil {
		nd.records = make(map[string]*jobdir.BenchmarkStatus, len(nd.status.Benchmarks))
		for i := range nd.status.Benchmarks {
			b := &nd.status.Benchmarks[i]
			if n := b.RunName(); nd.records[n] == nil {
				nd.records[n] = b
			}
		}
	}
	return nd.records[name]
}

type nodeBench struct {
	spec    benchSpec
	table   *Table
	source  uint8
	problem string
	idle    bool // the node has no part in this run (a trial of a smaller variant)
	tel     *nodeTel
	arts    *NodeArtefacts // what its output folder holds; nil: none, or not listed (rank)
}

// loadNode reads one node folder: its status and, for every benchmark, its results CSV or
// its log's performance line. specs nil means job.json was unreadable: the benchmarks are
// then those the node's status names, plus its results/ sub-folders.
//
// from says which attempt's folder job is: only the runs it holds are read (thisAttempt: the
// attempt collected; an earlier one holds the trials a requeued job resumed after).
func loadNode(ctx context.Context, fr *safefile.Reader, job jobdir.Dir, name string, specs []benchSpec, from int) *nodeData {
	nd := &nodeData{dir: name}
	node := job.NodeNamed(name)
	nd.rank, nd.host = node.Rank, node.Host
	dir := node.Path
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		// listed as a folder (jobdir.ListNodes), swapped for a link since: not read
		nd.statusErr = fmt.Errorf("%s is no longer a folder (a symbolic link or a file took its place while collect read the job); not read", dir)
		return nd
	}
	st, err := jobdir.ReadNodeStatus(fr, node) // status.json and the trial log's records, streamed
	switch {
	case st != nil:
		nd.status = st
		nd.trialLogErr = err // a damaged trial log: the records before the damage stand
	case errors.Is(err, fs.ErrNotExist):
	default:
		nd.statusErr = err
	}
	nd.nodeRec, nd.recordErr = jobdir.ReadNodeRecord(fr, node.NodeRecord())
	if specs == nil {
		specs = discoverSpecs(dir, st)
	}
	nd.benches = make([]nodeBench, len(specs))
	for i, sp := range specs {
		if ctx.Err() != nil {
			break // stopped: the aggregate is dropped
		}
		if !sp.runsOn(nd.rank) || !sp.inAttempt(from) {
			nd.benches[i] = nodeBench{spec: sp, idle: true} // a rank outside the trial's variant
			continue
		}
		nd.benches[i] = loadBench(ctx, fr, dir, name, sp, nd.record(sp.name))
		if nd.rank < MaxArtefactNodes {
			nd.benches[i].arts = scanArtefacts(dir, name, nd.rank, nd.host, sp.name, sp.results)
		}
		var telProblem string
		nd.benches[i].tel, telProblem = readNodeTelemetry(fr, dir, name, sp.name)
		if telProblem != "" && nd.benches[i].problem == "" {
			nd.benches[i].problem = "telemetry: " + telProblem
		}
	}
	return nd
}

// loadBench reads one benchmark's result on a node. A results CSV that was configured but
// not written falls back to the log's performance line.
func loadBench(ctx context.Context, fr *safefile.Reader, dir, name string, sp benchSpec, rec *jobdir.BenchmarkStatus) nodeBench {
	nb := nodeBench{spec: sp}
	if sp.results != "" {
		rel := filepath.Join(jobdir.ResultsRel(sp.name), sp.results)
		t, err := readCSVBeneath(ctx, fr, dir, rel, MaxCSVSize, MaxCSVRows)
		if err == nil {
			nb.table, nb.source = t, srcCSV
			if t.Total > len(t.Rows) {
				nb.problem = fmt.Sprintf("NOTE: %s has %d rows; only the first %d are used", jobdir.NodeDisplay(name, rel), t.Total, len(t.Rows))
			}
			return nb
		}
		if !errors.Is(err, fs.ErrNotExist) {
			nb.problem = relErr(err, dir, name)
			return nb
		}
	}
	logName := jobdir.LogName(sp.name)
	if rec != nil && rec.Log != "" && filepath.IsLocal(rec.Log) {
		logName = rec.Log
	}
	res, found, err := parseLogBeneath(dir, logName)
	missing := ""
	if sp.results != "" {
		missing = "no results file " + sp.results + " and "
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		nb.problem = missing + "no log " + logName
	case err != nil:
		nb.problem = missing + relErr(err, dir, name)
	case !found:
		nb.problem = missing + "no performance line in " + logName
	case res.Ambiguous != "":
		nb.problem = fmt.Sprintf("%s%s line %d: performance %q is ambiguous (a thousands separator or a decimal comma?): print the number without commas, e.g. \"performance: 1234.5 samples_per_second\"",
			missing, logName, res.Line, res.Ambiguous)
	default:
		nb.table, nb.source = logTable(sp.benchName(), res), srcLog
		if sp.results != "" {
			nb.problem = "no results file " + sp.results + "; used the log's performance line"
		}
	}
	return nb
}

// relErr shortens paths in an error message to be relative to the job folder.
func relErr(err error, dir, name string) string {
	msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), jobdir.NodeDisplay(name)+"/")
	return strings.ReplaceAll(msg, dir, jobdir.NodeDisplay(name))
}

// discoverSpecs lists a node's benchmarks without job.json: those its status names and the
// sub-folders of results/ (whose single .csv file, if any, is the results file).
func discoverSpecs(dir string, st *jobdir.Status) []benchSpec {
	var specs []benchSpec
	seen := map[string]bool{}
	if st != nil {
		for _, b := range st.Benchmarks {
			name := b.RunName()
			if filepath.IsLocal(name) && !seen[name] {
				seen[name] = true
				sp := benchSpec{name: name, results: soleCSV(filepath.Join(dir, jobdir.ResultsRel(name)))}
				if name != b.Name {
					sp.bench = b.Name
				}
				specs = append(specs, sp)
			}
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, jobdir.ResultsFolder))
	for _, e := range ents {
		if e.IsDir() && !seen[e.Name()] {
			seen[e.Name()] = true
			specs = append(specs, benchSpec{name: e.Name(), results: soleCSV(filepath.Join(dir, jobdir.ResultsRel(e.Name())))})
		}
	}
	return specs
}

func soleCSV(dir string) string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	if len(m) == 1 {
		return filepath.Base(m[0])
	}
	return ""
}

package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/jsonlimit"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
)

// History lists the rows of past collected jobs. The job folders are the truth: what history
// keeps for speed (jobs/.history/index.json: per job folder, its perf.csv's size and time and
// the rows read from it) is derived, checked against the folders on every call (one stat of
// each job's perf.csv), rebuilt where stale or missing, and written atomically. Several
// login nodes may write it at once on NFS without locks: a reader sees a whole file, and a
// lost update only costs reading those jobs again next time.

// HistoryRow is one perf.csv row of one collected job, with what the job says of itself.
type HistoryRow struct {
	Job         string    `json:"job"`
	Attempt     int       `json:"attempt"`
	Started     time.Time `json:"started"`
	Manifest    string    `json:"manifest"`
	Model       string    `json:"model"`
	Metric      string    `json:"metric"`
	Key         string    `json:"key,omitempty"`     // the key columns that tell a sweep's rows apart
	Variant     string    `json:"variant,omitempty"` // an experiment's variant
	Performance string    `json:"performance"`       // the median over trials in an experiment
	CILow       string    `json:"ciLow,omitempty"`
	CIHigh      string    `json:"ciHigh,omitempty"`
	Trials      string    `json:"trials,omitempty"`
	Nodes       string    `json:"nodes,omitempty"`
	Status      string    `json:"status"`
	GitCommit   string    `json:"gitCommit,omitempty"`
	Image       string    `json:"image,omitempty"` // the image id (docker_sha)
	// Verdict is the row against the same row of the manifest's reference job (the
	// threshold rule on the two values), when there is a reference and it has the row.
	Verdict string `json:"verdict,omitempty"`
}

// HistoryOptions filter the rows (empty: all).
type HistoryOptions struct {
	Manifest, Benchmark, Metric, Variant string
	// Last keeps the newest Last jobs (0: all).
	Last int
	// Threshold is the tolerance of the verdict against the reference, for metrics whose
	// rule gives none.
	Threshold float64
}

const (
	historyFolder  = ".history"
	historyIndex   = "index.json"
	historyVersion = 1
	maxIndexSize   = 64 << 20
)

type historyIndexFile struct {
	Version int                   `json:"version"`
	Jobs    map[string]indexedJob `json:"jobs"` // by the job folder's name
}

type indexedJob struct {
	Size  int64                  `json:"size"`  // of perf.csv
	MTime int64                  `json:"mtime"` // of perf.csv, in nanoseconds
	Rows  []HistoryRow           `json:"rows"`
	Rules []jobdir.JobMetricRule `json:"rules,omitempty"` // the manifest's metrics:
}

// indexLimits bound the decoded index (an index of 10,000 jobs of 3 rows has about 500,000
// marks): a file within maxIndexSize cannot make history hold gigabytes.
var indexLimits = jsonlimit.Limits{Marks: 5_000_000, Containers: 1_000_000, Depth: 16}

// History returns the rows of the collected jobs (the newest attempt of each) that opts
// selects, oldest first.
func History(l jobdir.Layout, opts HistoryOptions) ([]HistoryRow, error) {
	idx, changed := readHistoryIndex(l), false
	dirs, err := l.NewestAttempts(os.Getuid()) // the caller's own jobs: a co-writer's are not its history
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		name := filepath.Base(d.Path)
		seen[name] = true
		fi, err := os.Stat(d.Output(jobdir.PerfFile))
		if err != nil || !fi.Mode().IsRegular() {
			if _, ok := idx.Jobs[name]; ok {
				delete(idx.Jobs, name)
				changed = true
			}
			continue
		}
		if e, ok := idx.Jobs[name]; ok && e.Size == fi.Size() && e.MTime == fi.ModTime().UnixNano() {
			continue
		}
		e, err := indexJob(d)
		if err != nil {
			continue // unreadable: not history (collect says why)
		}
		e.Size, e.MTime = fi.Size(), fi.ModTime().UnixNano()
		idx.Jobs[name] = e
		changed = true
	}
	for name := range idx.Jobs {
		if !seen[name] {
			delete(idx.Jobs, name)
			changed = true
		}
	}
	if changed {
		_ = writeHistoryIndex(l, idx) // a lost update costs a rebuild, never a wrong answer
	}
	return selectHistory(l, idx, opts), nil
}

// readHistoryIndex reads the index when it is the caller's own: a file of this user that no
// one else may write, in a folder of this user that no one else may write (an index anyone
// else wrote could say anything about the jobs it names, with their perf.csv's size and
// time, which anyone can read). Anything else is an empty index: the history is then
// rebuilt from the job folders.
func readHistoryIndex(l jobdir.Layout) *historyIndexFile {
	empty := &historyIndexFile{Version: historyVersion, Jobs: map[string]indexedJob{}}
	dir, err := openOwnFolder(filepath.Join(l.Jobs(), historyFolder))
	if err != nil {
		return empty
	}
	defer dir.Close()
	f, err := safefile.OpenAt(dir, historyIndex)
	if err != nil {
		return empty
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !safefile.OwnedPrivately(st) {
		return empty
	}
	var r safefile.Reader
	data, err := r.ReadOpen(f, maxIndexSize)
	if err != nil || jsonlimit.Check(data, indexLimits) != nil {
		return empty
	}
	var idx historyIndexFile
	if json.Unmarshal(data, &idx) != nil || idx.Version != historyVersion || idx.Jobs == nil {
		return empty // another version, or damaged: rebuilt
	}
	return &idx
}

// writeHistoryIndex writes the index through the descriptor of the caller's own index
// folder (made when missing); an index larger than a reader takes is not written (it would
// never be read back, and be rewritten whole on every call).
func writeHistoryIndex(l jobdir.Layout, idx *historyIndexFile) error {
	data, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	if len(data) > maxIndexSize || jsonlimit.Check(data, indexLimits) != nil {
		return fmt.Errorf("the history index would be over what its reader takes: not written")
	}
	jobs, err := safefile.OpenDir(l.Jobs())
	if err != nil {
		return err
	}
	defer jobs.Close()
	dir, _, err := safefile.MkdirAt(jobs, historyFolder, 0o755)
	if err != nil {
		return err
	}
	defer dir.Close()
	if st, err := dir.Stat(); err != nil || !safefile.OwnedPrivately(st) {
		return fmt.Errorf("%s is not this user's own folder: the index is not written there", filepath.Join(l.Jobs(), historyFolder))
	}
	return atomicfile.WriteFileAt(dir, historyIndex, data, 0o644)
}

// openOwnFolder opens a folder (never through a link) that is the caller's and that no one
// else may write.
func openOwnFolder(path string) (*os.File, error) {
	d, err := safefile.OpenDir(path)
	if err != nil {
		return nil, err
	}
	if st, err := d.Stat(); err != nil || !safefile.OwnedPrivately(st) {
		d.Close()
		return nil, fmt.Errorf("%s is not this user's own folder", path)
	}
	return d, nil
}

// indexJob reads one collected job's rows.
func indexJob(d jobdir.Dir) (indexedJob, error) {
	j, err := jobdir.ReadJob(d.JobFile())
	if err != nil {
		return indexedJob{}, err
	}
	t, err := results.ReadCSVFile(d.Output(jobdir.PerfFile), results.MaxAppendSize)
	if err != nil {
		return indexedJob{}, err
	}
	var e indexedJob
	e.Rules = j.Manifest.Metrics
	e.Rows = HistoryRowsOf(t, j, d)
	return e, nil
}

// selectHistory filters, orders and judges the indexed rows.
func selectHistory(l jobdir.Layout, idx *historyIndexFile, o HistoryOptions) []HistoryRow {
	type jobRows struct {
		started time.Time
		name    string
		rows    []HistoryRow
		rules   []jobdir.JobMetricRule
	}
	var jobs []jobRows
	for name, e := range idx.Jobs {
		if len(e.Rows) == 0 || (o.Manifest != "" && e.Rows[0].Manifest != o.Manifest) {
			continue
		}
		jobs = append(jobs, jobRows{started: e.Rows[0].Started, name: name, rows: e.Rows, rules: e.Rules})
	}
	slices.SortFunc(jobs, func(a, b jobRows) int {
		if c := a.started.Compare(b.started); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	if o.Last > 0 && len(jobs) > o.Last {
		jobs = jobs[len(jobs)-o.Last:]
	}
	refs := map[string]map[string]string{} // manifest -> row id -> performance
	refOf := func(manifest string) map[string]string {
		if m, ok := refs[manifest]; ok {
			return m
		}
		var m map[string]string
		if r, err := l.ReadReference(manifest); err == nil && r != nil {
			if e, ok := idx.Jobs[jobdir.Name(r.Job, r.Attempt)]; ok {
				m = map[string]string{}
				for _, row := range e.Rows {
					m[HistoryRowID(row)] = row.Performance
				}
			}
		}
		refs[manifest] = m
		return m
	}
	var out []HistoryRow
	for _, j := range jobs {
		opts := CompareOptions{Threshold: o.Threshold, Rules: results.MetricRules(j.rules)}
		for _, row := range j.rows {
			if (o.Benchmark != "" && row.Model != o.Benchmark) || (o.Metric != "" && row.Metric != o.Metric) || (o.Variant != "" && row.Variant != o.Variant) {
				continue
			}
			if ref := refOf(row.Manifest); ref != nil {
				if base, ok := ref[HistoryRowID(row)]; ok {
					ch := Change{Base: base, New: row.Performance}
					ch.Direction, ch.Guessed, ch.Tolerance = opts.rule(row.Metric)
					judge(&ch, ch.Tolerance)
					row.Verdict = ch.Verdict
				}
			}
			out = append(out, row)
		}
	}
	return out
}

// HistoryRowID identifies a row across jobs: model, metric, key columns and variant.
func HistoryRowID(r HistoryRow) string {
	return r.Model + "\x00" + r.Metric + "\x00" + r.Key + "\x00" + r.Variant
}

// HistoryTable is history as a table (for -o csv, table and markdown).
func HistoryTable(rows []HistoryRow) *results.Table {
	t := &results.Table{Header: []string{"started", "job", "attempt", "manifest", "model", "metric", "key", "variant", "performance",
		"ci_low", "ci_high", "trials", "nodes", "status", "git_commit", "image", "verdict"}}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r.Started.UTC().Format(time.RFC3339), r.Job, strconv.Itoa(r.Attempt), r.Manifest, r.Model, r.Metric,
			r.Key, r.Variant, r.Performance, r.CILow, r.CIHigh, r.Trials, r.Nodes, r.Status, r.GitCommit, r.Image, r.Verdict})
	}
	return t
}

// WriteHistory writes history as an aligned table or markdown: one line per row.
func WriteHistory(w io.Writer, markdown bool, rows []HistoryRow) error {
	header := []string{"STARTED", "JOB", "MODEL", "METRIC", "KEY", "VARIANT", "PERFORMANCE", "INTERVAL", "TRIALS", "NODES", "STATUS", "COMMIT", "VERDICT"}
	var lines [][]string
	for _, r := range rows {
		ci := "-"
		if r.CILow != "" && r.CIHigh != "" {
			ci = r.CILow + " to " + r.CIHigh
		}
		commit := r.GitCommit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		job := r.Job
		if r.Attempt > 0 {
			job = jobdir.Name(r.Job, r.Attempt)
		}
		lines = append(lines, []string{r.Started.UTC().Format("2006-01-02 15:04"), job, r.Model, results.Dash(r.Metric), results.Dash(r.Key), results.Dash(r.Variant),
			results.Dash(r.Performance), ci, results.Dash(r.Trials), results.Dash(r.Nodes), results.Dash(r.Status), results.Dash(commit), results.Dash(r.Verdict)})
	}
	return results.WriteGrid(w, markdown, header, lines)
}

// HistoryRowsOf is a job's perf.csv as history rows.
func HistoryRowsOf(t *results.Table, j *jobdir.Job, d jobdir.Dir) []HistoryRow {
	col := t.Col
	cm, cme, cp, cst, cvar, clo, chi, ctr, cn, cgit, csha := col(results.ColModel), col(results.ColMetric), col(results.ColPerformance), col(results.ColStatus), col("benchctl_variant"),
		col("perf_ci_low"), col("perf_ci_high"), col("trials"), col("nnodes"), col("git_commit"), col("docker_sha")
	var out []HistoryRow
	for r := range t.Rows {
		keys := keyValues(t, r)
		out = append(out, HistoryRow{Job: d.JobID, Attempt: d.Attempt, Started: j.StartedAt, Manifest: j.Manifest.Name,
			Model: strings.TrimSpace(t.Get(r, cm)), Metric: strings.TrimSpace(t.Get(r, cme)), Key: strings.Join(keys, " "),
			Variant: t.Get(r, cvar), Performance: strings.TrimSpace(t.Get(r, cp)), CILow: t.Get(r, clo), CIHigh: t.Get(r, chi),
			Trials: t.Get(r, ctr), Nodes: t.Get(r, cn), Status: strings.TrimSpace(t.Get(r, cst)), GitCommit: t.Get(r, cgit), Image: t.Get(r, csha)})
	}
	return out
}

// keyValues is row r's key columns that have a value, as col=value in DefaultKeyColumns'
// order: what tells a sweep's rows apart, as history and the JUnit file name them.
func keyValues(t *results.Table, r int) []string {
	var keys []string
	for _, k := range results.DefaultKeyColumns() {
		if c := t.Col(k); c >= 0 && strings.TrimSpace(t.Get(r, c)) != "" {
			keys = append(keys, k+"="+strings.TrimSpace(t.Get(r, c)))
		}
	}
	return keys
}

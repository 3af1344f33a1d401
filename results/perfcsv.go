package results

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/stats"
)

// MadengineColumns is madengine's perf.csv header, in its order. perf.csv starts with it.
func MadengineColumns() []string {
	return []string{"model", "n_gpus", "nnodes", "gpus_per_node", "training_precision", "pipeline", "args", "tags",
		"docker_file", "base_docker", "docker_sha", "docker_image", "git_commit", "machine_name", "deployment_type",
		"launcher", "gpu_architecture", "performance", "metric", "relative_change", "status", "build_duration",
		"test_duration", "dataname", "data_provider_type", "data_size", "data_download_duration", "build_number",
		"additional_docker_run_options"}
}

// BenchctlColumns follow madengine's columns in perf.csv: the job, the winning node, and
// the statistics of the row across nodes. Columns a benchmark's CSV adds come after them.
func BenchctlColumns() []string {
	return []string{"benchctl_job", "benchctl_attempt", "benchctl_nodes", "benchctl_winner",
		"perf_min", "perf_max", "perf_mean", "perf_median", "perf_stdev", "perf_cv", "perf_nodes",
		"benchctl_failed_nodes", "benchctl_reason", "energy_j", "avg_power_w", "peak_power_w", "perf_per_watt", "throttled"}
}

// isComputed reports the madengine columns benchctl fills even when a benchmark's CSV has them.
func isComputed(col string) bool {
	switch col {
	case "model", "nnodes", "docker_sha", "docker_image", "machine_name", "deployment_type", "launcher",
		"performance", "metric", "status", "test_duration":
		return true
	}
	return false
}

// PerfTable builds perf.csv from a summary made by Aggregate: one row per row of each
// benchmark's winning CSV (one FAILURE row for a benchmark without a result). Columns:
// MadengineColumns, BenchctlColumns, then every other column of the winning CSVs, in the
// order first seen (a name that clashes with benchctl's, with a madengine column the CSV
// already has, or with another of its columns gets the suffix "_csv", as often as needed).
//
// madengine columns are filled from the CSV row when it has a non-empty value, else from
// what the job knows: nnodes is the job's world; n_gpus and gpus_per_node come from the
// model's nGPUs or the manifest's gpu.count (n_gpus = per node × nodes when a number; "all"
// is written -1, as madengine does);
// training_precision, args and docker_file from the MAD model; tags from the benchmark,
// then the tools the job ran under (after a CSV's own tags too, in the order they stacked);
// docker_sha, docker_image, base_docker from the image; machine_name is the winning host;
// where those say nothing, machine_name and gpu_architecture come from the winning node's
// record (node.json: its hostname, its first GPU's architecture);
// test_duration the longest run of the benchmark on any node (seconds). The columns model,
// performance, metric, status, nnodes, docker_sha, docker_image, machine_name,
// deployment_type, launcher and test_duration are always benchctl's.
//
// For a job with an experiment see experimentPerfTable: one row per benchmark, variant and
// row key.
func PerfTable(s *Summary) *Table {
	if s.Experiment != nil {
		return experimentPerfTable(s)
	}
	return perfTable(s, nil, nil)
}

// perfTable builds perf.csv's rows from s.Benchmarks; more columns go after benchctl's, and
// fill, when given, writes them (and may change others) for benchmark bi's row ri.
func perfTable(s *Summary, more []string, fill func(out []string, index map[string]int, bi, ri int)) *Table {
	header := append(append(MadengineColumns(), BenchctlColumns()...), more...)
	index := make(map[string]int, len(header))
	for i, h := range header {
		index[h] = i
	}
	fixed := len(header)
	// extra[b][i] is the perf.csv column of the winner CSV's column i (-1: a madengine column).
	extra := make([][]int, len(s.Benchmarks))
	for bi, b := range s.Benchmarks {
		if b.table == nil {
			continue
		}
		extra[bi] = make([]int, len(b.table.Header))
		claimed := map[string]bool{}  // madengine columns this CSV already fills
		used := map[int]bool{}        // perf.csv columns this CSV's extra columns already fill
		inHeader := map[string]bool{} // a renamed column must not take the name of another
		for _, h := range b.table.Header {
			inHeader[h] = true
		}
		for i, h := range b.table.Header {
			extra[bi][i] = -1
			if mc := madengineColumn(h); mc != "" && !claimed[mc] {
				claimed[mc] = true
				continue
			}
			// An extra column; one whose name clashes with a madengine column this CSV already
			// fills ("Performance" beside "performance"), with benchctl's own, or with another
			// column of this CSV gets "_csv" appended until it is unique: nothing is dropped.
			name := h
			for {
				c, ok := index[name]
				if (!ok || (c >= fixed && !used[c])) && (name == h || !inHeader[name]) {
					break
				}
				name += "_csv"
			}
			c, ok := index[name]
			if !ok {
				c = len(header)
				header = append(header, name)
				index[name] = c
			}
			used[c] = true
			extra[bi][i] = c
		}
	}
	t := &Table{Header: header}
	for bi := range s.Benchmarks {
		b := &s.Benchmarks[bi]
		for ri, row := range b.Rows {
			out := make([]string, len(header))
			fillKnown(out, index, s, b, row)
			if fill != nil {
				fill(out, index, bi, ri)
			}
			if b.table != nil {
				src := b.table.Rows[ri]
				for i, h := range b.table.Header {
					switch c := extra[bi][i]; {
					case c >= 0:
						out[c] = src[i]
					case !isComputed(madengineColumn(h)) && strings.TrimSpace(src[i]) != "":
						out[index[madengineColumn(h)]] = src[i]
					}
				}
			}
			if len(b.Tools) > 0 {
				out[index["tags"]] = tagsWithTools(out[index["tags"]], b.Tools)
			}
			t.Rows = append(t.Rows, out)
		}
	}
	if len(s.Benchmarks) == 0 {
		out := make([]string, len(header))
		fillKnown(out, index, s, &BenchmarkSummary{Name: CmpOr(s.Name, s.Job)},
			RowSummary{Model: CmpOr(s.Name, s.Job), Status: StatusFailure, Reason: noBenchmarksReason})
		t.Rows = append(t.Rows, out)
	}
	return t
}

// tagsWithTools is a row's tags with the tools the run stacked after them (a comma list),
// so that a profiled run is not taken for a plain one (baselineKey matches tags).
func tagsWithTools(tags string, tools []string) string {
	if strings.TrimSpace(tags) == "" {
		return strings.Join(tools, ",")
	}
	return tags + "," + strings.Join(tools, ",")
}

// noBenchmarksReason is the FAILURE row of a job folder without any benchmark.
const noBenchmarksReason = "no benchmarks found in the job folder"

// madengineColumn maps a CSV column to the madengine column it is, or "".
func madengineColumn(h string) string {
	for _, m := range MadengineColumns() {
		if h == m || (isWellKnown(m) && strings.EqualFold(h, m)) {
			return m
		}
	}
	return ""
}

func CmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fillKnown writes what benchctl knows about a row.
func fillKnown(out []string, index map[string]int, s *Summary, b *BenchmarkSummary, row RowSummary) {
	set := func(col, v string) { out[index[col]] = v }
	world := s.Nodes.Expected
	var jb *jobdir.JobBenchmark
	var m *jobdir.JobManifest
	if s.job != nil {
		m = &s.job.Manifest
		for i := range m.Benchmarks {
			if m.Benchmarks[i].Name == b.Name {
				jb = &m.Benchmarks[i]
			}
		}
	}
	set("model", row.Model)
	set("nnodes", strconv.Itoa(world))
	perNode := ""
	if m != nil {
		perNode = string(m.GPU.Count)
	}
	if jb != nil && jb.Model != nil {
		if g := string(jb.Model.NGPUs); g != "" {
			perNode = g
		}
		set("training_precision", jb.Model.TrainingPrecision)
		set("args", jb.Model.Args)
		set("docker_file", jb.Model.Dockerfile)
		set("additional_docker_run_options", jb.Model.RunOptions)
		fillData(set, jb.Model.DataSets)
	}
	if strings.EqualFold(perNode, "all") {
		perNode = "-1" // madengine's "all the node has"
	}
	set("gpus_per_node", perNode)
	set("n_gpus", perNode)
	if n, err := strconv.Atoi(perNode); err == nil && n >= 0 {
		set("n_gpus", strconv.Itoa(n*world))
	}
	if b.GPUs > 0 { // what the containers really got, as the nodes recorded it
		set("gpus_per_node", strconv.Itoa(b.GPUsPerNode))
		set("n_gpus", strconv.Itoa(b.GPUs))
	}
	set("gpu_architecture", s.GPUArch)
	if s.job != nil {
		set("build_number", s.job.BuildNumber)
	}
	img := s.Image
	if s.job != nil && len(s.job.Images) > 0 { // the benchmarks ran on several images
		img = s.job.ImageOf(b.Name)
	}
	set("git_commit", img.GitCommit)
	if jb != nil && jb.Model != nil && jb.Model.Commit != "" { // a MAD model's url, cloned by the job
		set("git_commit", jb.Model.Commit)
	}
	if img.BuildSeconds > 0 {
		set("build_duration", stats.FormatStat(img.BuildSeconds))
	}
	if jb != nil {
		set("tags", strings.Join(jb.Tags, ","))
	}
	if img.Dockerfile != "" {
		df := img.Dockerfile
		if jb != nil && jb.Model != nil && jb.Model.Dockerfile != "" && strings.HasPrefix(filepath.Base(df), path.Base(jb.Model.Dockerfile)+".") {
			// A MAD model's own Dockerfile, as madengine names it: beside its prefix
			// (docker/x.ubuntu.amd.Dockerfile for the prefix docker/x).
			df = path.Join(path.Dir(jb.Model.Dockerfile), filepath.Base(df))
		}
		set("docker_file", df)
	}
	if m != nil {
		if out[index["docker_file"]] == "" {
			set("docker_file", m.Image.Dockerfile)
		}
		if m.Image.Dockerfile == "" {
			set("base_docker", m.Image.Ref)
		}
	}
	if img.Base != "" {
		set("base_docker", img.Base)
	}
	set("docker_sha", img.ID)
	tag := img.Tag
	if tag == "" && m != nil {
		tag = CmpOr(m.Image.Tag, m.Image.Ref)
	}
	if _, dg, ok := strings.Cut(img.Digest, "@"); ok && tag != "" && !strings.Contains(tag, "@") {
		tag += "@" + dg // what the tag resolved to for this job (an image.ref pulled from its registry)
	}
	set("docker_image", tag)
	set("deployment_type", s.Deployment)
	set("launcher", "benchctl") // the harness, where the benchmark names no launcher
	if jb != nil && jb.Launcher != "" {
		set("launcher", jb.Launcher) // madengine's: torchrun, deepspeed, vllm, ...
	}
	set("performance", row.Performance)
	set("metric", row.Metric)
	set("status", row.Status)
	if b.Durations.Nodes > 0 {
		set("test_duration", stats.FormatStat(b.Durations.Max))
	}
	set("benchctl_job", s.Job)
	set("benchctl_attempt", strconv.Itoa(s.Attempt))
	set("benchctl_nodes", strconv.Itoa(s.Nodes.Reported))
	if b.Winner != nil {
		set("machine_name", b.Winner.Host)
		set("benchctl_winner", b.Winner.Label())
		if m, ok := s.machines[b.Winner.Rank]; ok { // the winner's node record, where nothing else said
			for col, v := range map[string]string{"machine_name": m.hostname, "gpu_architecture": m.arch} {
				if out[index[col]] == "" {
					set(col, v)
				}
			}
		}
	}
	if st := row.Stats; st.Nodes > 0 {
		set("perf_min", st.Min)
		set("perf_max", st.Max)
		set("perf_mean", stats.FormatStat(st.Mean))
		set("perf_median", stats.FormatStat(st.Median))
		set("perf_stdev", stats.FormatStat(st.Stdev))
		set("perf_cv", stats.FormatStat(st.CV))
		set("perf_nodes", strconv.Itoa(st.Nodes))
	}
	set("benchctl_failed_nodes", listFailures(b.Failed, maxListedNodes))
	set("benchctl_reason", shorten(row.Reason, 400))
	if t := b.Telemetry; t.Complete() { // a part of the nodes' figures is never shown as the run's
		set("energy_j", formatOpt(t.EnergyJ))
		set("avg_power_w", formatOpt(t.AvgPowerW))
		set("peak_power_w", formatOpt(t.PeakPowerW))
		set("perf_per_watt", formatOpt(row.PerfPerWatt))
	}
	if t := b.Telemetry; t != nil && (t.ThrottleKnown || t.Throttled) {
		set("throttled", strconv.FormatBool(t.Throttled))
	}
}

// formatOpt is FormatStat of a figure that may be missing ("").
func formatOpt(v *float64) string {
	if v == nil {
		return ""
	}
	return stats.FormatStat(*v)
}

// EncodeCSV writes a table as CSV (RFC 4180, \n line ends). It is the one CSV writer of
// results (perf.csv, collect --append, -o csv, compare -o csv): every column name and cell
// that a spreadsheet would take for a formula gets a single quote in front (textsafe.Cell;
// numbers such as -1.5 stay as written). t is not changed.
func EncodeCSV(t *Table) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	var rec []string
	for i, row := range append([][]string{t.Header}, t.Rows...) {
		rec = rec[:0]
		for _, c := range row {
			rec = append(rec, textsafe.Cell(c))
		}
		if err := w.Write(rec); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

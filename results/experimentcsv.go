package results

import (
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/results/stats"
)

// ExperimentColumns follow benchctl's columns in the perf.csv of a job with an experiment:
// the variant, one param_<name> column per parameter, and the trials' statistics.
func ExperimentColumns(params []string) []string {
	cols := []string{"benchctl_variant"}
	for _, p := range params {
		cols = append(cols, "param_"+p)
	}
	return append(cols, "trials", "failed_trials", "perf_ci_low", "perf_ci_high", "perf_ci_coverage", "outlier_trials")
}

// experimentPerfTable is perf.csv of a job with an experiment: one row per benchmark,
// variant and row key. performance is the median over the measured trials, nnodes the
// variant's nodes (n_gpus with them); perf_min, perf_max, perf_mean, perf_median,
// perf_stdev and perf_cv are over the measured trials (perf_nodes: the nodes that reported
// in the first measured trial); the other columns of the benchmark's CSV come from the
// first measured trial that gave the row. benchctl_winner is empty: a trial's picked node
// is in summary.json, and no node is the experiment's winner.
func experimentPerfTable(s *Summary) *Table {
	es := s.Experiment
	d := *s
	d.Experiment = nil
	d.Benchmarks = make([]BenchmarkSummary, 0, len(es.Rows))
	for _, er := range es.Rows {
		var bs BenchmarkSummary
		if er.src != nil {
			bs = *er.src
			t := *er.src.table
			t.Rows = [][]string{er.src.table.Rows[er.srcRow]}
			bs.table = &t
		} else {
			bs = BenchmarkSummary{Failed: []NodeFailure{}}
		}
		bs.Name = er.Benchmark
		row := RowSummary{Model: er.Model, Metric: er.Metric, Identity: er.Identity, Occurrence: er.Occurrence, Status: er.Status, Reason: er.Reason}
		if er.Stats.Trials > 0 {
			row.Performance = stats.FormatStat(er.Stats.Median)
		}
		bs.Rows = []RowSummary{row}
		d.Benchmarks = append(d.Benchmarks, bs)
	}
	return perfTable(&d, ExperimentColumns(es.Params), func(out []string, index map[string]int, bi, _ int) {
		er := &es.Rows[bi]
		set := func(col, v string) { out[index[col]] = v }
		v := es.Variants[er.variant]
		set("nnodes", strconv.Itoa(v.Nodes))
		if n, err := strconv.Atoi(out[index["gpus_per_node"]]); err == nil && n >= 0 && d.Benchmarks[bi].GPUs == 0 {
			set("n_gpus", strconv.Itoa(n*v.Nodes))
		}
		set("benchctl_winner", "")
		set("machine_name", "")
		set("benchctl_variant", v.ID)
		for _, p := range es.Params {
			val, _ := v.Param(p)
			set("param_"+p, val)
		}
		for _, c := range []string{"energy_j", "avg_power_w", "peak_power_w", "perf_per_watt", "throttled"} {
			set(c, "") // a trial's figures are not the variant's
		}
		if tt := er.Telemetry; tt != nil {
			set("energy_j", formatOpt(tt.EnergyJ))
			set("avg_power_w", formatOpt(tt.AvgPowerW))
			set("perf_per_watt", formatOpt(tt.PerfPerWatt))
			set("throttled", strconv.FormatBool(tt.Throttled))
		}
		st := er.Stats
		set("trials", strconv.Itoa(st.Trials))
		set("failed_trials", strconv.Itoa(er.Failed))
		for _, c := range []string{"perf_min", "perf_max", "perf_mean", "perf_median", "perf_stdev", "perf_cv", "perf_ci_low", "perf_ci_high", "perf_ci_coverage"} {
			set(c, "")
		}
		if st.Trials > 0 {
			set("perf_min", stats.FormatStat(st.Min))
			set("perf_max", stats.FormatStat(st.Max))
			set("perf_mean", stats.FormatStat(st.Mean))
			set("perf_median", stats.FormatStat(st.Median))
			set("perf_stdev", stats.FormatStat(st.Stdev))
			set("perf_cv", stats.FormatStat(st.CV))
			if st.Trials > 1 {
				set("perf_ci_low", stats.FormatStat(st.CILow))
				set("perf_ci_high", stats.FormatStat(st.CIHigh))
				set("perf_ci_coverage", stats.FormatStat(st.CICoverage))
			}
		}
		outl := make([]string, len(st.Outliers))
		for i, o := range st.Outliers {
			outl[i] = strconv.Itoa(o)
		}
		set("outlier_trials", strings.Join(outl, " "))
	})
}

package compare

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/results/stats"
)

// WriteOpenMetrics writes the newest value of every row key of rows (history, oldest first)
// in the Prometheus text format, which a node exporter's textfile collector and a push
// gateway read: samples without timestamps (neither accepts them), the job's start time as
// a series of its own. Labels: manifest, model, metric, key, variant. A value that is not a
// number is left out.
func WriteOpenMetrics(w io.Writer, rows []HistoryRow) error {
	type series struct {
		labels string
		row    HistoryRow
		value  float64
	}
	newest := map[string]*series{}
	var order []string
	for _, r := range rows {
		v, ok := stats.ParsePerformance(r.Performance)
		if !ok {
			continue
		}
		id := r.Manifest + "\x00" + HistoryRowID(r)
		s := newest[id]
		if s == nil {
			s = &series{labels: promLabels("manifest", r.Manifest, "model", r.Model, "metric", r.Metric, "key", r.Key, "variant", r.Variant)}
			newest[id] = s
			order = append(order, id)
		}
		s.row, s.value = r, v
	}
	slices.Sort(order)
	var b strings.Builder
	metric := func(name, help string, value func(s *series) (float64, bool)) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for _, id := range order {
			s := newest[id]
			if v, ok := value(s); ok {
				fmt.Fprintf(&b, "%s{%s} %s\n", name, s.labels, strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
	}
	metric("benchctl_performance", "The newest collected value of a benchmark row (in an experiment, the median over its trials).",
		func(s *series) (float64, bool) { return s.value, true })
	metric("benchctl_job_start_time_seconds", "When the job of the newest value started (Unix time).",
		func(s *series) (float64, bool) { return float64(s.row.Started.Unix()), !s.row.Started.IsZero() })
	metric("benchctl_trials", "How many measured trials the newest value is the median of.",
		func(s *series) (float64, bool) {
			n, err := strconv.Atoi(s.row.Trials)
			return float64(n), err == nil
		})
	metric("benchctl_regressed", "1 when the newest value regressed against the manifest's reference job, else 0.",
		func(s *series) (float64, bool) {
			if s.row.Verdict == "" {
				return 0, false
			}
			if s.row.Verdict == VerdictRegressed {
				return 1, true
			}
			return 0, true
		})
	b.WriteString("# EOF\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// promLabels writes name="value" pairs with the text format's escapes (\\, \", \n).
func promLabels(kv ...string) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	parts := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, kv[i]+`="`+esc.Replace(kv[i+1])+`"`)
	}
	return strings.Join(parts, ",")
}

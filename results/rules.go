package results

import (
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// The metric-direction rules: which way is better for a metric, by its manifest rule or
// guessed from its name. Aggregation (scaling, perf per watt) judges by them, and so do
// compare, history and the report.

// Directions: which way is better.
const (
	HigherIsBetter = "higher"
	LowerIsBetter  = "lower"
	AutoDirection  = "auto" // lower for metrics that look like times (latency, seconds, ms, ...)
)

// RuleOf is how a metric is judged by rules: direction, whether it was guessed, and the
// tolerance (threshold, in percent, where its rule gives none). dir is which way is better
// for a metric without a rule (auto, or empty, guesses from its name).
func RuleOf(rules []manifest.MetricRule, threshold float64, dir, metric string) (better string, guessed bool, tol float64) {
	tol = threshold
	r := manifest.RuleFor(rules, metric)
	if r != nil && r.Tolerance != nil {
		tol = *r.Tolerance
	}
	switch {
	case r != nil && r.Better != "":
		return r.Better, false, tol
	case dir == HigherIsBetter || dir == LowerIsBetter:
		return dir, false, tol
	}
	return Direction(AutoDirection, metric), true, tol
}

// Direction resolves auto for a metric.
func Direction(d, metric string) string {
	switch d {
	case LowerIsBetter:
		return LowerIsBetter
	case AutoDirection:
		m := strings.ToLower(metric)
		for _, w := range []string{"latency", "time", "second", "duration", "_ms", "_us", "_ns"} {
			if strings.Contains(m, w) && !strings.Contains(m, "per_second") && !strings.Contains(m, "/s") {
				return LowerIsBetter
			}
		}
		switch m {
		case "s", "ms", "us", "ns", "sec", "msec", "usec":
			return LowerIsBetter
		}
	}
	return HigherIsBetter
}

// MetricRules is job.json's metric rules as the manifest's.
func MetricRules(rs []jobdir.JobMetricRule) []manifest.MetricRule {
	var out []manifest.MetricRule
	for _, r := range rs {
		out = append(out, manifest.MetricRule{Metric: r.Metric, Better: r.Better, Tolerance: r.Tolerance})
	}
	return out
}

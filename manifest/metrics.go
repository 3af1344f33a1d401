package manifest

import (
	"fmt"
	"math"
	"path"
	"reflect"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/manifest/document"
)

// MetricsSpec is the manifest's metrics: mapping as written, in order: each metric name (or
// glob) says which way is better and how much change is tolerated. The first rule whose
// pattern matches a metric decides.
type MetricsSpec struct {
	Rules []MetricRule
}

// MetricRule is how one metric (or every metric its glob matches) is judged.
type MetricRule struct {
	// Metric is a name or a glob (path.Match: *, ?, [...]) matched against perf.csv's metric.
	Metric string `json:"metric" yaml:"metric"`
	// Better is higher or lower; "" leaves it to the guess from the name.
	Better string `json:"better,omitempty" yaml:"better,omitempty"`
	// Tolerance is the change, in percent, that is never a regression or an improvement;
	// nil: compare's --threshold.
	Tolerance *float64 `json:"tolerance,omitempty" yaml:"tolerance,omitempty"`
}

// Which way a metric is better (MetricRule.Better).
const (
	BetterHigher = "higher"
	BetterLower  = "lower"
)

// MaxTolerance is the largest tolerance a rule may give, in percent.
const MaxTolerance = 1000

func (m *MetricsSpec) DecodeNode(d *document.Decoder, n *document.Node, fp string) {
	if n.Kind == document.NullNode {
		return
	}
	if n.Kind != document.MapNode {
		d.Problems.At(n.Line, fp, "must be a mapping of metric names (or globs) to {better: higher|lower, tolerance: 3%%}, got %s", n.Describe())
		return
	}
	for i, k := range n.Keys {
		kfp := document.Join(fp, k.Value)
		d.Problems.SetLineOnce(kfp, k.Line)
		if _, err := path.Match(k.Value, ""); err != nil || strings.TrimSpace(k.Value) == "" || len(k.Value) > 200 {
			d.Problems.At(k.Line, kfp, "%s is not a metric name or glob (a name such as tokens_per_second, or a pattern such as \"*_busbw\")", document.Quote(k.Value))
			continue
		}
		v := n.Items[i]
		var raw struct {
			Better    string        `json:"better"`
			Tolerance ToleranceSpec `json:"tolerance"`
		}
		before := d.Problems.Count()
		if v.Kind != document.MapNode {
			d.Problems.At(v.Line, kfp, "must be a mapping such as {better: higher, tolerance: 3%%}, got %s", v.Describe())
			continue
		}
		d.DecodeStruct(v, reflect.ValueOf(&raw).Elem(), kfp)
		if d.Problems.Count() > before {
			continue
		}
		r := MetricRule{Metric: k.Value}
		switch raw.Better {
		case "", BetterHigher, BetterLower:
			r.Better = raw.Better
		default:
			d.Problems.At(v.Line, document.Join(kfp, "better"), "%s is not a direction: use higher (throughputs, bandwidths) or lower (times, latencies)", document.Quote(raw.Better))
			continue
		}
		if raw.Tolerance.Set {
			t := raw.Tolerance.Percent
			r.Tolerance = &t
		}
		if r.Better == "" && r.Tolerance == nil {
			d.Problems.At(v.Line, kfp, "says nothing: give better (higher or lower), tolerance, or both")
			continue
		}
		m.Rules = append(m.Rules, r)
	}
}

// ToleranceSpec is a tolerance as written: "3%", "0.5%", or a number of percent.
type ToleranceSpec struct {
	Percent float64
	Set     bool
}

func (t *ToleranceSpec) DecodeNode(d *document.Decoder, n *document.Node, fp string) {
	if n.Kind != document.ScalarNode || (n.Tag != document.TagStr && n.Tag != document.TagInt && n.Tag != document.TagFloat) {
		d.Problems.At(n.Line, fp, "must be a percentage such as 3%% (or a number of percent), got %s", n.Describe())
		return
	}
	v, err := ParseTolerance(n.Value)
	if err != nil {
		d.Problems.At(n.Line, fp, "%v", err)
		return
	}
	t.Percent, t.Set = v, true
}

// ParseTolerance reads a tolerance: "3%", "0.5 %", "3" (percent), from 0 to MaxTolerance.
func ParseTolerance(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > MaxTolerance {
		return 0, fmt.Errorf("%s is not a tolerance: give a percentage from 0%% to %d%%, such as 3%%", document.Quote(s), MaxTolerance)
	}
	return v, nil
}

// RuleFor is the first rule whose pattern matches metric, or nil.
func RuleFor(rules []MetricRule, metric string) *MetricRule {
	for i := range rules {
		if ok, _ := path.Match(rules[i].Metric, metric); ok || rules[i].Metric == metric {
			return &rules[i]
		}
	}
	return nil
}

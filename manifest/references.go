package manifest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest/document"
)

// A references file (compare --references refs.yaml) is for sites that keep their expected
// figures beside their tests, as ReFrame's references do: the manifest's metrics: mapping
// (which way is better, the tolerance), and absolute expected values per model and metric
// with the bounds a result may stray within.
//
//	metrics:
//	  tokens_per_second: {better: higher, tolerance: 3%}
//	references:
//	  - {model: llama31-8b, metric: tokens_per_second, value: 1234, lower: -5%, upper: 10%}
//	  - {model: allreduce_busbw, metric: GB/s, key: {size_bytes: "67108864"}, value: 0.7}

// References is a parsed references file.
type References struct {
	Rules      []MetricRule
	References []Reference
}

// Reference is an expected value of a row: a result below Value·(1+Lower/100) or above
// Value·(1+Upper/100) is out of bounds. A bound not given is the metric's tolerance on the
// worse side, and none on the better side.
type Reference struct {
	Model   string
	Metric  string
	Key     map[string]string // key columns the row must have with these values
	Variant string            // an experiment's variant id, when given
	Value   float64
	Lower   *float64 // percent, ≤ 0
	Upper   *float64 // percent, ≥ 0
	Line    int
}

type referencesSpec struct {
	Metrics    MetricsSpec     `json:"metrics"`
	References []referenceSpec `json:"references"`
}

type referenceSpec struct {
	Model   string            `json:"model"`
	Metric  string            `json:"metric"`
	Key     map[string]string `json:"key"`
	Variant string            `json:"variant"`
	Value   NumberSpec        `json:"value"`
	Lower   BoundSpec         `json:"lower"`
	Upper   BoundSpec         `json:"upper"`
}

// NumberSpec is a number as written (an integer or a decimal).
type NumberSpec struct {
	V   float64
	Set bool
}

func (n *NumberSpec) DecodeNode(d *document.Decoder, node *document.Node, fp string) {
	v, err := strconv.ParseFloat(node.Value, 64)
	if node.Kind != document.ScalarNode || (node.Tag != document.TagInt && node.Tag != document.TagFloat) || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.Problems.At(node.Line, fp, "must be a number, got %s", node.Describe())
		return
	}
	n.V, n.Set = v, true
}

// BoundSpec is a signed percentage: "-5%", "+10%", "3" (percent).
type BoundSpec struct {
	Percent float64
	Set     bool
}

func (b *BoundSpec) DecodeNode(d *document.Decoder, node *document.Node, fp string) {
	s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(node.Value), "%"))
	v, err := strconv.ParseFloat(s, 64)
	if node.Kind != document.ScalarNode || node.Tag == document.TagNull || node.Tag == document.TagBool || err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > MaxTolerance {
		d.Problems.At(node.Line, fp, "must be a percentage such as -5%% or +10%% (from -%d%% to %d%%), got %s", MaxTolerance, MaxTolerance, node.Describe())
		return
	}
	b.Percent, b.Set = v, true
}

// maxReferencesSize bounds a references file.
const maxReferencesSize = 16 << 20

// LoadReferences reads and checks a references file; problems are an *Error with the file's
// lines (exit 4).
func LoadReferences(path string) (*References, error) {
	data, err := safefile.ReadFile(path, maxReferencesSize)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, invalidFile(path, "no such file")
		}
		return nil, invalidFile(path, err.Error())
	}
	root, err := document.Parse(path, data)
	if err != nil {
		var pe *document.ParseError
		if errors.As(err, &pe) {
			return nil, &document.Error{File: path, Problems: []document.Problem{{File: path, Line: pe.Line, Msg: pe.Msg}}}
		}
		return nil, err
	}
	p := document.NewProblems(path)
	p.SetLine("", root.Line)
	if root.Kind != document.MapNode {
		p.At(root.Line, "", "a references file is a mapping of metrics: and references:, got %s", root.Describe())
		return nil, p.Err()
	}
	var spec referencesSpec
	d := &document.Decoder{Problems: p}
	d.Decode(root, reflect.ValueOf(&spec).Elem(), "")
	refs := &References{Rules: spec.Metrics.Rules}
	for i, r := range spec.References {
		fp := document.Index("references", i)
		switch {
		case r.Model == "" || r.Metric == "":
			p.Add(fp, "needs model and metric (the row's perf.csv columns)")
			continue
		case !r.Value.Set:
			p.Add(fp+".value", "is required: the expected value")
			continue
		case r.Lower.Set && r.Lower.Percent > 0:
			p.Add(fp+".lower", "%v%% is above the value: lower is 0%% or below (e.g. -5%%)", r.Lower.Percent)
			continue
		case r.Upper.Set && r.Upper.Percent < 0:
			p.Add(fp+".upper", "%v%% is below the value: upper is 0%% or above (e.g. +10%%)", r.Upper.Percent)
			continue
		}
		ref := Reference{Model: r.Model, Metric: r.Metric, Key: r.Key, Variant: r.Variant, Value: r.Value.V, Line: p.Line(fp)}
		if r.Lower.Set {
			v := r.Lower.Percent
			ref.Lower = &v
		}
		if r.Upper.Set {
			v := r.Upper.Percent
			ref.Upper = &v
		}
		refs.References = append(refs.References, ref)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if len(refs.Rules) == 0 && len(refs.References) == 0 {
		return nil, invalidFile(path, "holds neither metrics: nor references:")
	}
	return refs, nil
}

// String is the reference for messages: "llama tokens_per_second [size_bytes=64] = 1234".
func (r Reference) String() string {
	s := r.Model + " " + r.Metric
	if len(r.Key) > 0 || r.Variant != "" {
		var parts []string
		for _, k := range sortedKeys(r.Key) {
			parts = append(parts, k+"="+r.Key[k])
		}
		if r.Variant != "" {
			parts = append(parts, r.Variant)
		}
		s += " [" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%s = %s", s, strconv.FormatFloat(r.Value, 'g', -1, 64))
}

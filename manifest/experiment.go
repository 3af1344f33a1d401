package manifest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/manifest/document"
)

// MatrixSpec is an experiment's matrix as written: parameters in the order written, and the
// include and exclude entries.
type MatrixSpec struct {
	Params  []MatrixParam
	Include []MatrixEntry
	Exclude []MatrixEntry
	Line    int
}

// Limits of an experiment: a matrix that multiplies out beyond them is refused before it is
// expanded.
const (
	// MaxVariants is the most variants an experiment may have.
	MaxVariants = 1000
	// MaxTrials is the most trials (warmups included) a job may run.
	MaxTrials = 100000
	// MaxParamValue is the longest value a parameter may take, in bytes.
	MaxParamValue = 1024
	// MaxVariantParams is the most parameters a variant may have.
	MaxVariantParams = 64
	// MaxIncludeEntries is the most entries an include or exclude list may have.
	MaxIncludeEntries = 10_000
	// MaxVariantsBytes bounds the variants' parameters as job.json holds them (names,
	// values and their quoting), well within what every reader of job.json takes.
	MaxVariantsBytes = 4 << 20
)

// Trial orders (Experiment.Order).
const (
	OrderInterleave = "interleave"
	OrderSequential = "sequential"
	OrderShuffle    = "shuffle"
)

// ParamNodes is the reserved parameter: how many nodes a variant uses.
const ParamNodes = "nodes"

var paramNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`) })

func (m *MatrixSpec) DecodeNode(d *document.Decoder, n *document.Node, path string) {
	m.Line = n.Line
	if n.Kind != document.MapNode {
		d.Problems.At(n.Line, path, "must be a mapping of parameter names to lists of values (e.g. {batch: [16, 32]}), got %s", n.Describe())
		return
	}
	seen := map[string]string{} // upper-cased name -> name as written
	for i, k := range n.Keys {
		v, fp := n.Items[i], document.Join(path, k.Value)
		d.Problems.SetLineOnce(fp, k.Line)
		switch k.Value {
		case "include", "exclude":
			entries := matrixEntries(d, v, fp)
			if k.Value == "include" {
				m.Include = entries
			} else {
				m.Exclude = entries
			}
			continue
		}
		if !paramName(d, k, fp, seen) {
			continue
		}
		if v.Kind != document.SeqNode || len(v.Items) == 0 {
			d.Problems.At(v.Line, fp, "must be a non-empty list of values (e.g. [16, 32]), got %s", v.Describe())
			continue
		}
		p := MatrixParam{Name: k.Value, Line: k.Line}
		dup := map[string]bool{}
		for j, it := range v.Items {
			val, ok := paramValue(d, it, document.Index(fp, j), k.Value)
			if !ok {
				continue
			}
			if dup[val] {
				d.Problems.At(it.Line, document.Index(fp, j), "%s is listed twice", document.Quote(val))
				continue
			}
			dup[val] = true
			p.Values = append(p.Values, val)
		}
		m.Params = append(m.Params, p)
	}
}

// paramName checks a parameter's name where it is written (a matrix key, an include or
// exclude key).
func paramName(d *document.Decoder, k *document.Node, fp string, seen map[string]string) bool {
	name := k.Value
	switch {
	case !paramNameRE().MatchString(name):
		d.Problems.At(k.Line, fp, "%s is not a parameter name (a letter or _, then letters, digits and _; at most 64): it names the variable BENCHCTL_PARAM_<NAME> and the perf.csv column param_<name>", document.Quote(name))
		return false
	case seen != nil && seen[strings.ToUpper(name)] != "":
		d.Problems.At(k.Line, fp, "%s and %s would both be BENCHCTL_PARAM_%s: rename one", document.Quote(seen[strings.ToUpper(name)]), document.Quote(name), strings.ToUpper(name))
		return false
	}
	if seen != nil {
		seen[strings.ToUpper(name)] = name
	}
	return true
}

// paramValue reads one value of a parameter: a string, number or boolean, kept as written.
func paramValue(d *document.Decoder, n *document.Node, fp, name string) (string, bool) {
	if n.Kind != document.ScalarNode || n.Tag == document.TagNull {
		d.Problems.At(n.Line, fp, "must be a string or a number, got %s", n.Describe())
		return "", false
	}
	v := n.Value
	switch {
	case len(v) > MaxParamValue:
		d.Problems.At(n.Line, fp, "is %d bytes long; a parameter value may have at most %d", len(v), MaxParamValue)
		return "", false
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		d.Problems.At(n.Line, fp, "%s holds a control character (a newline, a tab, ...); parameter values are one line of text", document.Quote(v))
		return "", false
	}
	if name == ParamNodes {
		if i, err := strconv.Atoi(v); err != nil || i < 1 || i > MaxExperimentNodes || n.Tag != document.TagInt {
			d.Problems.At(n.Line, fp, "nodes must be a whole number of nodes from 1 to %d, got %s", MaxExperimentNodes, n.Describe())
			return "", false
		}
	}
	return v, true
}

// MaxExperimentNodes bounds the nodes parameter (the job channel's largest world).
const MaxExperimentNodes = 1 << 16

// matrixEntries reads an include or exclude list: mappings of parameter names to values.
func matrixEntries(d *document.Decoder, n *document.Node, fp string) []MatrixEntry {
	if n.Kind == document.NullNode {
		return nil
	}
	if n.Kind != document.SeqNode {
		d.Problems.At(n.Line, fp, "must be a list of mappings of parameters to values (e.g. [{nodes: 1, batch: 32}]), got %s", n.Describe())
		return nil
	}
	if len(n.Items) > MaxIncludeEntries {
		d.Problems.At(n.Line, fp, "has %d entries; at most %d are allowed (an experiment has at most %d variants): list fewer, or use the matrix's parameters", len(n.Items), MaxIncludeEntries, MaxVariants)
		return nil
	}
	var out []MatrixEntry
	for i, it := range n.Items {
		efp := document.Index(fp, i)
		d.Problems.SetLineOnce(efp, it.Line)
		if it.Kind != document.MapNode || len(it.Keys) == 0 {
			d.Problems.At(it.Line, efp, "must be a mapping of parameters to values (e.g. {nodes: 1, batch: 32}), got %s", it.Describe())
			continue
		}
		if len(it.Keys) > MaxVariantParams {
			d.Problems.At(it.Line, efp, "names %d parameters; a variant may have at most %d", len(it.Keys), MaxVariantParams)
			continue
		}
		e := MatrixEntry{Line: it.Line}
		for j, k := range it.Keys {
			kfp := document.Join(efp, k.Value)
			d.Problems.SetLineOnce(kfp, k.Line)
			if !paramName(d, k, kfp, nil) {
				continue
			}
			if v, ok := paramValue(d, it.Items[j], kfp, k.Value); ok {
				e.Params = append(e.Params, Param{k.Value, v})
			}
		}
		out = append(out, e)
	}
	return out
}

// Experiment is a resolved experiment: its variants, how many trials each runs, and in
// which order.
type Experiment struct {
	// Params are the names of the parameters, sorted: every name any variant has.
	Params   []string  `json:"params" yaml:"params"`
	Variants []Variant `json:"variants" yaml:"variants"`
	Repeat   int       `json:"repeat" yaml:"repeat"`
	Warmup   int       `json:"warmup" yaml:"warmup"`
	Order    string    `json:"order" yaml:"order"`
	// Seed is the shuffle order's seed when the manifest gives one; else the run derives one
	// (and records it).
	Seed *int64 `json:"seed,omitempty" yaml:"seed,omitempty"`
}

// Variant is one combination of the matrix.
type Variant struct {
	// ID is the variant's stable name: its parameters as name=value, sorted by name and
	// joined by commas (BENCHCTL_VARIANT); "," "=" and "%" in a value are %-escaped.
	ID string `json:"id" yaml:"id"`
	// Params are the variant's parameters, sorted by name (nodes included when given).
	Params []Param `json:"params" yaml:"params"`
	// Nodes is how many nodes the variant uses (ranks 0..Nodes-1); 0: every node of the job.
	Nodes int `json:"nodes,omitempty" yaml:"nodes,omitempty"`
	// Results names, by benchmark, the results file of each benchmark whose results
	// take a parameter ({{name}}): the file its runs in this variant write.
	Results map[string]string `json:"results,omitempty" yaml:"results,omitempty"`
	// Benchmarks are the manifest's benchmarks with the variant's parameters substituted
	// ({{name}} in command, env values and results). Not persisted: a node resolves its
	// manifest itself.
	Benchmarks []Benchmark `json:"-" yaml:"-"`
}

// Param returns the variant's value of a parameter.
func (v Variant) Param(name string) (string, bool) {
	for _, p := range v.Params {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// MaxNodes is the largest node count of the experiment's variants (0: every variant uses
// every node of the job).
func (e *Experiment) MaxNodes() int {
	n := 0
	for _, v := range e.Variants {
		n = max(n, v.Nodes)
	}
	return n
}

// Trials is how many trials a job of the experiment runs, warmups included.
func (e *Experiment) Trials() int { return len(e.Variants) * (e.Repeat + e.Warmup) }

// variantID is the stable id of a variant's sorted parameters.
func variantID(ps []Param) string {
	esc := strings.NewReplacer("%", "%25", ",", "%2C", "=", "%3D")
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Name + "=" + esc.Replace(p.Value)
	}
	return strings.Join(parts, ",")
}

// experiment resolves the experiment block: the variants and their benchmarks (the
// manifest's benchmarks, resolved once per variant from the text as written with the
// variant's values in place of {{name}}).
func (r *resolver) experiment(s *Spec, m *Manifest) {
	placeholders := r.placeholders(s.Benchmarks)
	if s.Experiment == nil {
		for _, ph := range placeholders {
			r.warn(ph.path, "{{%s}} is kept as written: there is no experiment, so no parameter to put in its place (add experiment.matrix, or write it differently)", ph.name)
		}
		return
	}
	x := s.Experiment
	e := &Experiment{Repeat: 1, Order: OrderInterleave, Seed: x.Seed}
	if x.Repeat != nil {
		if *x.Repeat < 1 || *x.Repeat > MaxTrials {
			r.p.Add("experiment.repeat", "must be from 1 to %d measured trials per variant, got %d", MaxTrials, *x.Repeat)
		}
		e.Repeat = *x.Repeat
	}
	if x.Warmup != nil {
		if *x.Warmup < 0 || *x.Warmup > MaxTrials {
			r.p.Add("experiment.warmup", "must be from 0 to %d trials per variant, got %d", MaxTrials, *x.Warmup)
		}
		e.Warmup = *x.Warmup
	}
	switch x.Order {
	case "":
	case OrderInterleave, OrderSequential, OrderShuffle:
		e.Order = x.Order
	default:
		r.p.Add("experiment.order", "%s is not a trial order: use interleave (the default: trial 1 of every variant, then trial 2, ...), sequential (every trial of a variant before the next) or shuffle (a seeded random order)", document.Quote(x.Order))
	}
	if x.Seed != nil && e.Order != OrderShuffle {
		r.warn("experiment.seed", "only a shuffle order uses a seed; order is %s", e.Order)
	}
	mx := x.Matrix
	known := map[string]bool{}
	for _, p := range mx.Params {
		known[p.Name] = true
	}
	for i, ex := range mx.Exclude {
		for _, p := range ex.Params {
			if !known[p.Name] {
				r.p.Add(document.Join(document.Index("experiment.matrix.exclude", i), p.Name), "%s is not a parameter of the matrix (%s): an exclude entry can only name the matrix's own parameters", document.Quote(p.Name), paramList(mx.Params))
			}
		}
	}
	if r.p.Count() > 0 {
		return
	}
	if !r.includeEntriesDistinct(mx) {
		return
	}
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	combos, err := expandMatrix(ctx, mx.Params, mx.Include, mx.Exclude, MaxVariants)
	if err != nil {
		r.p.Add("experiment.matrix", "%v", err)
		return
	}
	if len(mx.Params) == 0 && len(mx.Include) == 0 {
		combos = [][]Param{nil} // repeat alone: one variant without parameters
	}
	if len(combos) == 0 {
		r.p.Add("experiment.matrix", "leaves no variant: exclude removes every combination (check experiment.matrix.exclude)")
		return
	}
	if err := variantsFit(combos); err != nil {
		r.p.Add("experiment.matrix", "%v", err)
		return
	}
	if len(combos)*(e.Repeat+e.Warmup) > MaxTrials {
		r.p.Add("experiment", "%d variants × %d trials each (repeat %d + warmup %d) is %d trials; a job may run at most %d", len(combos), e.Repeat+e.Warmup, e.Repeat, e.Warmup, len(combos)*(e.Repeat+e.Warmup), MaxTrials)
		return
	}
	names := map[string]bool{}
	for _, ps := range combos {
		v := Variant{ID: variantID(ps), Params: ps}
		for _, p := range ps {
			names[p.Name] = true
			if p.Name == ParamNodes {
				v.Nodes, _ = strconv.Atoi(p.Value)
			}
		}
		e.Variants = append(e.Variants, v)
	}
	for n := range names {
		e.Params = append(e.Params, n)
	}
	slices.Sort(e.Params)
	if !r.placeholdersKnown(placeholders, e) {
		return
	}
	r.variantBenchmarks(s, m, e)
	m.Experiment = e
}

// includeEntriesDistinct refuses, each at its line, an include entry that names a parameter
// spelled otherwise than the matrix or an earlier entry spells it (Batch and batch: both
// BENCHCTL_PARAM_BATCH), and one that is the same as an earlier entry.
func (r *resolver) includeEntriesDistinct(mx MatrixSpec) bool {
	spelled := map[string]string{} // upper-cased name -> name as first written
	for _, p := range mx.Params {
		spelled[strings.ToUpper(p.Name)] = p.Name
	}
	ok := true
	first := map[string]int{} // an entry's parameters, sorted -> its index
	for i, e := range mx.Include {
		fp := document.Index("experiment.matrix.include", i)
		for _, p := range e.Params {
			u := strings.ToUpper(p.Name)
			if s, seen := spelled[u]; seen && s != p.Name {
				r.p.Add(document.Join(fp, p.Name), "%s and %s would both be BENCHCTL_PARAM_%s: spell the parameter one way", document.Quote(s), document.Quote(p.Name), u)
				ok = false
			} else if !seen {
				spelled[u] = p.Name
			}
		}
		ps := slices.Clone(e.Params)
		slices.SortFunc(ps, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
		key := variantID(ps)
		if j, dup := first[key]; dup {
			r.p.Add(fp, "is the same entry as include[%d]: give each variant once", j)
			ok = false
			continue
		}
		first[key] = i
	}
	return ok
}

// variantsFit says whether the expanded variants fit what job.json's readers take: at most
// MaxVariantParams parameters each, MaxVariantsBytes in all.
func variantsFit(combos [][]Param) error {
	size := 0
	for i, ps := range combos {
		if len(ps) > MaxVariantParams {
			return fmt.Errorf("variant %d has %d parameters (the matrix's and its include entries'); a variant may have at most %d", i+1, len(ps), MaxVariantParams)
		}
		for _, p := range ps {
			size += 2*len(p.Name) + 2*len(p.Value) + 40 // the variant's id and params, quoted, as job.json holds them
		}
	}
	if size > MaxVariantsBytes {
		return fmt.Errorf("the %d variants' parameters would take about %.1f MiB of job.json; at most %d MiB are allowed: fewer variants, fewer parameters or shorter values", len(combos), float64(size)/(1<<20), MaxVariantsBytes>>20)
	}
	return nil
}

func paramList(ps []MatrixParam) string {
	if len(ps) == 0 {
		return "it has none"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// variantBenchmarks resolves the manifest's own benchmarks once per variant, with the
// variant's values substituted in the text as written: a ${VAR} whose value holds "{{x}}"
// is never read as a parameter. Catalog models take no parameters and are the same in
// every variant. A problem found in a variant is reported at the field, naming the variant.
func (r *resolver) variantBenchmarks(s *Spec, m *Manifest, e *Experiment) {
	own := len(s.Benchmarks)
	if own > len(m.Benchmarks) {
		return // the benchmarks had problems; they are reported
	}
	catalog := m.Benchmarks[own:]
	for i := range e.Variants {
		v := &e.Variants[i]
		specs := make([]BenchmarkSpec, own)
		for j, b := range s.Benchmarks {
			specs[j] = substituteSpec(b, v.Params)
		}
		sub := &resolver{p: r.p.Fresh(), ctx: r.ctx, dir: r.dir, lookup: r.lookup, secrets: r.secrets, missing: r.missing}
		bs := sub.benchmarks(specs)
		if e := sub.p.Err(); e != nil {
			for _, pr := range e.(*document.Error).Problems {
				pr.Msg = fmt.Sprintf("in variant %s: %s", v.ID, pr.Msg)
				r.p.Record(pr)
			}
			return
		}
		// Only the fields that take parameters differ from the benchmark resolved once (which
		// later steps may have completed, its image for one).
		v.Benchmarks = make([]Benchmark, 0, len(m.Benchmarks))
		for j, b := range m.Benchmarks[:own] {
			if bs[j].Results != b.Results {
				if v.Results == nil {
					v.Results = map[string]string{}
				}
				v.Results[b.Name] = bs[j].Results
			}
			b.Command, b.Env, b.Results = bs[j].Command, bs[j].Env, bs[j].Results
			v.Benchmarks = append(v.Benchmarks, b)
		}
		v.Benchmarks = append(v.Benchmarks, catalog...)
	}
}

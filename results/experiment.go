package results

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results/stats"
)

// experimentSpecs are the runs of a job with an experiment: every benchmark in every trial
// of the plan job.json's experiment gives (the same plan every node walked).
func (a *aggregator) experimentSpecs(j *jobdir.Job) {
	x := planOf(j)
	var plan []manifest.Trial
	if len(j.TrialOrder) > 0 {
		p, err := x.PlanOf(j.TrialOrder)
		if err != nil {
			a.problem("job.json: trialOrder: %v; the trials are read in the order the seed gives", err)
		}
		plan = p
	}
	if plan == nil { // a job.json from before trialOrder (or a damaged one)
		plan = x.Plan(planSeed(j, x))
	}
	for _, t := range plan {
		v := j.Manifest.Experiment.Variants[t.Variant]
		for _, b := range j.Manifest.Benchmarks {
			if b.Name == "" || (len(j.Benchmarks) > 0 && !slices.Contains(j.Benchmarks, b.Name)) {
				continue
			}
			results := b.Results
			if r, ok := v.Results[b.Name]; ok {
				results = r
			}
			if !filepath.IsLocal(b.Name) || (results != "" && !filepath.IsLocal(results)) {
				a.problem("job.json: benchmark %q with results %q names a path outside its folder; ignored", b.Name, results)
				continue
			}
			sp := benchSpec{name: jobdir.TrialRunName(b.Name, t.Seq), results: results, bench: b.Name,
				run: &trialSpec{seq: t.Seq, variant: t.Variant, n: t.N, warmup: t.Warmup, nodes: v.Nodes, from: thisAttempt}}
			if from := j.TrialAttempt(t.Seq); from >= 0 && from < j.Attempt {
				sp.run.from = from
			}
			if a.byName[sp.name] != nil {
				continue
			}
			a.specs = append(a.specs, sp)
			a.bench(sp)
		}
	}
}

// checkExperiment refuses an experiment in job.json that benchctl would never have run: its
// plan would be too large to compute (a hostile or damaged file), or its variants' node
// counts impossible.
func checkExperiment(je *jobdir.JobExperiment) error {
	switch {
	case len(je.Variants) == 0:
		return fmt.Errorf("no variants")
	case len(je.Variants) > manifest.MaxVariants:
		return fmt.Errorf("%d variants, more than %d", len(je.Variants), manifest.MaxVariants)
	case je.Repeat < 1 || je.Warmup < 0 || je.Repeat > manifest.MaxTrials || je.Warmup > manifest.MaxTrials:
		return fmt.Errorf("repeat %d and warmup %d", je.Repeat, je.Warmup)
	case len(je.Variants)*(je.Repeat+je.Warmup) > manifest.MaxTrials:
		return fmt.Errorf("%d trials, more than %d", len(je.Variants)*(je.Repeat+je.Warmup), manifest.MaxTrials)
	}
	for _, v := range je.Variants {
		if v.Nodes < 0 || v.Nodes > manifest.MaxExperimentNodes {
			return fmt.Errorf("variant %q uses %d nodes", v.ID, v.Nodes)
		}
	}
	return nil
}

// planOf is the part of job.json's experiment that its plan depends on.
func planOf(j *jobdir.Job) *manifest.Experiment {
	je := j.Manifest.Experiment
	x := &manifest.Experiment{Repeat: je.Repeat, Warmup: je.Warmup, Order: je.Order, Seed: je.Seed,
		Variants: make([]manifest.Variant, len(je.Variants))}
	for i, v := range je.Variants {
		x.Variants[i] = manifest.Variant{ID: v.ID, Nodes: v.Nodes}
	}
	return x
}

// planSeed is the seed rank 0 recorded for a shuffled plan, else the one every node derived:
// the plan of a job.json written before trialOrder.
func planSeed(j *jobdir.Job, x *manifest.Experiment) int64 {
	if j.TrialSeed != nil {
		return *j.TrialSeed
	}
	return x.PlanSeed(j.Job)
}

// ExperimentSummary is what a job's trials add up to: for every benchmark, variant and
// row key, the measured trials' statistics; and the scaling along nodes.
type ExperimentSummary struct {
	Params   []string         `json:"params"`
	Repeat   int              `json:"repeat"`
	Warmup   int              `json:"warmup"`
	Order    string           `json:"order"`
	Seed     *int64           `json:"seed,omitempty"` // the shuffle's
	Variants []VariantSummary `json:"variants"`
	Rows     []ExperimentRow  `json:"rows"`
	Scaling  []ScalingSummary `json:"scaling,omitempty"`
}

// VariantSummary is one variant of the experiment.
type VariantSummary struct {
	ID     string            `json:"id"`
	Params []jobdir.JobParam `json:"params"`
	Nodes  int               `json:"nodes"`
}

// Param returns the variant's value of a parameter ("" and false: it has none).
func (v VariantSummary) Param(name string) (string, bool) {
	for _, p := range v.Params {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// ExperimentRow is one benchmark, variant and row key over the trials: perf.csv's row.
type ExperimentRow struct {
	Benchmark  string            `json:"benchmark"`
	Variant    string            `json:"variant"`
	Nodes      int               `json:"nodes"`
	Model      string            `json:"model"`
	Metric     string            `json:"metric"`
	Identity   map[string]string `json:"identity,omitempty"`
	Occurrence int               `json:"occurrence,omitempty"`
	// Status is SUCCESS when every measured trial gave a value; Reason says which did not.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Stats are over the measured trials that gave a value; Failed counts those that did
	// not (a failed trial is never a value).
	Stats  stats.TrialStats `json:"stats"`
	Failed int              `json:"failedTrials"`
	// Trials are every trial of the variant, warmups included, in the variant's order.
	Trials []TrialPoint `json:"trials"`
	// Telemetry is over the measured trials that sampled their GPUs; nil without any.
	Telemetry *TrialTelemetry `json:"telemetry,omitempty"`

	variant int
	src     *BenchmarkSummary // the first measured trial with this row: its CSV row fills perf.csv's other columns
	srcRow  int
}

// TrialPoint is one trial's figure for a row.
type TrialPoint struct {
	Trial        int     `json:"trial"`        // the trial's place in the job's plan
	VariantTrial int     `json:"variantTrial"` // its number in the variant (BENCHCTL_TRIAL)
	Warmup       bool    `json:"warmup,omitempty"`
	Value        float64 `json:"value"`
	HasValue     bool    `json:"hasValue"`
	Status       string  `json:"status"`
	Reason       string  `json:"reason,omitempty"`
	Outlier      bool    `json:"outlier,omitempty"`
	// Picked is the node whose result was picked for the trial (the row's value comes from
	// its CSV or log), as rank-host.
	Picked string `json:"picked,omitempty"`
	// EnergyJ and AvgPowerW are the trial's run's (its Telemetry), Throttled whether a node
	// was throttled in it.
	EnergyJ   *float64 `json:"energyJ,omitempty"`
	AvgPowerW *float64 `json:"avgPowerW,omitempty"`
	Throttled bool     `json:"throttled,omitempty"`
}

// ScalingSummary is one metric's scaling along the nodes parameter, for one combination of
// the other parameters.
type ScalingSummary struct {
	Benchmark  string            `json:"benchmark"`
	Model      string            `json:"model"`
	Metric     string            `json:"metric"`
	Identity   map[string]string `json:"identity,omitempty"`
	Occurrence int               `json:"occurrence,omitempty"`
	// Params are the other parameters' values, shared by the points.
	Params []jobdir.JobParam `json:"params,omitempty"`
	// Better is higher or lower; Guessed says it was guessed from the metric's name.
	Better  string               `json:"better"`
	Guessed bool                 `json:"guessed"`
	Points  []stats.ScalingPoint `json:"points"`
	// Intervals are the medians' intervals, by point (for error bars).
	Intervals [][2]float64 `json:"intervals"`
}

// buildExperiment reduces the trial runs of s.Benchmarks (in plan order) to the
// experiment's rows.
func buildExperiment(j *jobdir.Job, s *Summary) *ExperimentSummary {
	je := j.Manifest.Experiment
	x := planOf(j)
	es := &ExperimentSummary{Params: slices.Clone(je.Params), Repeat: je.Repeat, Warmup: je.Warmup, Order: je.Order}
	if je.Order == manifest.OrderShuffle {
		seed := planSeed(j, x)
		es.Seed = &seed
	}
	for _, v := range je.Variants {
		vs := VariantSummary{ID: v.ID, Params: v.Params, Nodes: v.Nodes}
		if vs.Nodes == 0 {
			vs.Nodes = s.Nodes.Expected
		}
		es.Variants = append(es.Variants, vs)
	}
	type rowID struct {
		bench   string
		variant int
		key     string
	}
	rows := map[rowID]*ExperimentRow{}
	var order []rowID
	type runID struct {
		bench   string
		variant int
	}
	// A trial's run without a result (no node produced one) failed every row of its
	// benchmark and variant: it is added to each once all rows are known.
	failedRuns := map[runID][]*BenchmarkSummary{}
	var failedOrder []runID
	for bi := range s.Benchmarks {
		b := &s.Benchmarks[bi]
		if b.Trial == 0 || b.variant >= len(es.Variants) {
			continue
		}
		if b.Winner == nil {
			id := runID{b.Benchmark, b.variant}
			if failedRuns[id] == nil {
				failedOrder = append(failedOrder, id)
			}
			failedRuns[id] = append(failedRuns[id], b)
			continue
		}
		picked := ""
		if b.Winner != nil {
			picked = b.Winner.Label()
		}
		for ri, r := range b.Rows {
			id := rowID{b.Benchmark, b.variant, rowKeyOf(r)}
			er := rows[id]
			if er == nil {
				v := es.Variants[b.variant]
				er = &ExperimentRow{Benchmark: b.Benchmark, Variant: v.ID, Nodes: v.Nodes, Model: r.Model, Metric: r.Metric,
					Identity: r.Identity, Occurrence: r.Occurrence, variant: b.variant, srcRow: -1}
				rows[id] = er
				order = append(order, id)
			}
			tp := TrialPoint{Trial: b.Trial, VariantTrial: b.VariantTrial, Warmup: b.Warmup, Status: r.Status, Reason: r.Reason, Picked: picked}
			if t := b.Telemetry; t.Complete() {
				tp.EnergyJ, tp.AvgPowerW = t.EnergyJ, t.AvgPowerW
			}
			if t := b.Telemetry; t != nil {
				tp.Throttled = t.Throttled
			}
			if r.Status == StatusSuccess {
				tp.Value, tp.HasValue = stats.ParsePerformance(r.Performance)
			}
			if er.Metric == "" {
				er.Metric = r.Metric
			}
			if !b.Warmup && tp.HasValue && er.src == nil && b.table != nil && ri < len(b.table.Rows) {
				er.src, er.srcRow = b, ri
			}
			er.Trials = append(er.Trials, tp)
		}
	}
	for _, fid := range failedOrder {
		added := false
		for _, id := range order {
			if id.bench == fid.bench && id.variant == fid.variant {
				added = true
				for _, b := range failedRuns[fid] {
					rows[id].Trials = append(rows[id].Trials, failedPoint(b))
				}
			}
		}
		if !added { // no trial of the variant gave a row: one row holds the failures
			v := es.Variants[fid.variant]
			id := rowID{fid.bench, fid.variant, "\x00failed"}
			er := &ExperimentRow{Benchmark: fid.bench, Variant: v.ID, Nodes: v.Nodes, Model: fid.bench, variant: fid.variant, srcRow: -1}
			for _, b := range failedRuns[fid] {
				er.Trials = append(er.Trials, failedPoint(b))
			}
			rows[id] = er
			order = append(order, id)
		}
	}
	for _, id := range order {
		er := rows[id]
		slices.SortFunc(er.Trials, func(a, b TrialPoint) int { return a.VariantTrial - b.VariantTrial })
		var vals []stats.TrialValue
		var failed []string
		for _, t := range er.Trials {
			switch {
			case t.Warmup:
			case t.HasValue:
				vals = append(vals, stats.TrialValue{Trial: t.VariantTrial, Value: t.Value})
			default:
				er.Failed++
				failed = append(failed, fmt.Sprintf("trial %d (%s)", t.VariantTrial, shorten(t.Reason, 80)))
			}
		}
		er.Stats = stats.ComputeTrialStats(vals)
		er.Telemetry = trialTelemetry(er, MetricRules(j.Manifest.Metrics))
		for i := range er.Trials {
			er.Trials[i].Outlier = slices.Contains(er.Stats.Outliers, er.Trials[i].VariantTrial) && !er.Trials[i].Warmup
		}
		er.Status = StatusSuccess
		switch {
		case len(vals) == 0:
			er.Status, er.Reason = StatusFailure, "no measured trial gave a value"
			if len(failed) > 0 {
				er.Reason += ": " + strings.Join(firstN(failed, maxListedNodes), "; ")
			}
		case len(failed) > 0:
			er.Status, er.Reason = StatusFailure, fmt.Sprintf("%d of %d measured trials failed: %s", len(failed), len(failed)+len(vals), strings.Join(firstN(failed, maxListedNodes), "; "))
		}
		es.Rows = append(es.Rows, *er)
	}
	es.Scaling = scalingOf(es, MetricRules(j.Manifest.Metrics))
	return es
}

// rowKeyOf identifies a row across trials: its model, metric, key columns and occurrence.
func rowKeyOf(r RowSummary) string {
	var b strings.Builder
	b.WriteString(r.Model)
	b.WriteByte(0)
	b.WriteString(r.Metric)
	keys := make([]string, 0, len(r.Identity))
	for k := range r.Identity {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k + "=" + strings.TrimSpace(r.Identity[k]))
	}
	if r.Occurrence > 1 {
		b.WriteString("\x00#" + strconv.Itoa(r.Occurrence))
	}
	return b.String()
}

func firstN(ss []string, n int) []string {
	if len(ss) <= n {
		return ss
	}
	return append(slices.Clip(ss[:n]), fmt.Sprintf("and %d more", len(ss)-n))
}

// scalingOf groups the rows of variants that differ only in nodes: for each benchmark, row
// key and combination of the other parameters, the medians against nodes, when there are
// at least two node counts.
//
// The metric's direction is the manifest's metrics: rule's, else guessed from its name (and
// marked so).
func scalingOf(es *ExperimentSummary, rules []manifest.MetricRule) []ScalingSummary {
	if !slices.Contains(es.Params, manifest.ParamNodes) {
		return nil
	}
	type groupID struct{ bench, key, others string }
	groups := map[groupID]*ScalingSummary{}
	var order []groupID
	for i := range es.Rows {
		r := &es.Rows[i]
		if r.Stats.Trials == 0 {
			continue
		}
		v := es.Variants[r.variant]
		var others []jobdir.JobParam
		for _, p := range v.Params {
			if p.Name != manifest.ParamNodes {
				others = append(others, p)
			}
		}
		id := groupID{r.Benchmark, rowKeyOf(RowSummary{Model: r.Model, Metric: r.Metric, Identity: r.Identity, Occurrence: r.Occurrence}), ParamText(others)}
		g := groups[id]
		if g == nil {
			better, guessed, _ := RuleOf(rules, 0, "", r.Metric)
			g = &ScalingSummary{Benchmark: r.Benchmark, Model: r.Model, Metric: r.Metric, Identity: r.Identity, Occurrence: r.Occurrence,
				Params: others, Better: better, Guessed: guessed}
			groups[id] = g
			order = append(order, id)
		}
		g.Points = append(g.Points, stats.ScalingPoint{Nodes: r.Nodes, Value: r.Stats.Median})
		g.Intervals = append(g.Intervals, [2]float64{r.Stats.CILow, r.Stats.CIHigh})
	}
	var out []ScalingSummary
	for _, id := range order {
		g := groups[id]
		if len(g.Points) < 2 {
			continue
		}
		// Sort points and intervals together by nodes, then compute.
		idx := make([]int, len(g.Points))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return g.Points[a].Nodes - g.Points[b].Nodes })
		pts, ivs := make([]stats.ScalingPoint, len(idx)), make([][2]float64, len(idx))
		for i, k := range idx {
			pts[i], ivs[i] = g.Points[k], g.Intervals[k]
		}
		g.Points, g.Intervals = stats.Scaling(pts, g.Better == HigherIsBetter), ivs
		out = append(out, *g)
	}
	return out
}

// ParamText is "name=value,..." of parameters, for grouping and display.
func ParamText(ps []jobdir.JobParam) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Name + "=" + p.Value
	}
	return strings.Join(parts, ",")
}

// failedPoint is the trial point of a run without a result.
func failedPoint(b *BenchmarkSummary) TrialPoint {
	return TrialPoint{Trial: b.Trial, VariantTrial: b.VariantTrial, Warmup: b.Warmup, Status: StatusFailure, Reason: b.Reason}
}

// streamEarlier reads the trials a requeued job resumed after from the folders of the
// attempts that ran them (job.json's trialSources). Their nodes are not counted again (the
// job's nodes are the collected attempt's); their runs join the trials' results.
func (a *aggregator) streamEarlier(ctx context.Context) error {
	froms := map[int]bool{}
	for _, sp := range a.specs {
		if sp.run != nil && sp.run.from != thisAttempt {
			froms[sp.run.from] = true
		}
	}
	var fr safefile.Reader
	for _, from := range slices.Sorted(maps.Keys(froms)) {
		dir := a.dir.OtherAttempt(from)
		pj, err := jobdir.ReadJob(dir.JobFile())
		if err != nil {
			pj = nil
		}
		list, err := dir.ListNodes(pj)
		if err != nil {
			a.problem("the trials attempt %d ran (trialSources of job.json) cannot be read: %v", from, err)
			continue
		}
		for _, nf := range list.Nodes {
			if err := ctx.Err(); err != nil {
				return err
			}
			nd := loadNode(ctx, &fr, dir, nf.Name, a.specs, from)
			kind, f := a.classify(nd)
			for i := range nd.benches {
				a.addBench(nd, kind, f, &nd.benches[i])
			}
		}
	}
	return ctx.Err()
}

// Measured is the values of the row's measured trials that gave one.
func (r ExperimentRow) Measured() []float64 {
	var out []float64
	for _, t := range r.Trials {
		if !t.Warmup && t.HasValue {
			out = append(out, t.Value)
		}
	}
	return out
}

// VariantOf is the variant that r was measured in.
func (x *ExperimentSummary) VariantOf(r ExperimentRow) VariantSummary { return x.Variants[r.variant] }

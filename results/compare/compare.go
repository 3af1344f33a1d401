package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// Verdicts of a compared row.
const (
	VerdictRegressed    = "regressed"
	VerdictImproved     = "improved"
	VerdictSame         = "no change"
	VerdictInconclusive = "inconclusive" // the shift's interval straddles the tolerance
	VerdictOnlyBase     = "only in base"
	VerdictOnlyNew      = "only in new"
	VerdictNoNumber     = "no number"
	VerdictFromZero     = "changed from zero" // no percentage from a base of 0; not judged
)

// CompareOptions: Threshold is the tolerance, in percent (5 means 5 %), of a metric whose
// rule gives none; Direction is which way is better for a metric without a rule (auto, the
// default, guesses from its name and says so). Rules are the metrics' own (the manifest's
// metrics:, or a --references file's), first match wins. Alpha is the significance level of
// the rank test (default 0.05).
type CompareOptions struct {
	Threshold float64
	Direction string
	Rules     []manifest.MetricRule
	Alpha     float64
}

func (o CompareOptions) alpha() float64 {
	if o.Alpha > 0 && o.Alpha < 1 {
		return o.Alpha
	}
	return 0.05
}

// rule is how a metric is judged: direction, whether it was guessed, and the tolerance.
func (o CompareOptions) rule(metric string) (dir string, guessed bool, tol float64) {
	return results.RuleOf(o.Rules, o.Threshold, o.Direction, metric)
}

// Change is one row of a comparison, joined on model, metric and key columns.
type Change struct {
	Model     string   `json:"model"`
	Metric    string   `json:"metric"`
	Key       string   `json:"key,omitempty"` // the key columns that tell a sweep's rows apart, e.g. "batch_size=32"
	Base      string   `json:"base"`          // as written (a median over trials); "" when absent
	New       string   `json:"new"`
	Percent   *float64 `json:"percent,omitempty"` // the change in percent of base: (new-base)/|base| × 100, or over trials the shift's estimate
	Direction string   `json:"direction"`
	// Guessed says the direction was guessed from the metric's name (no rule said).
	Guessed bool `json:"guessed,omitempty"`
	// Tolerance is the change in percent within which the row is no change.
	Tolerance float64 `json:"tolerance"`
	Verdict   string  `json:"verdict"`
	Status    string  `json:"status,omitempty"` // "SUCCESS -> FAILURE" when the row's status got worse
	// Method is "rank test" when both sides have several trials (the verdict weighs their
	// noise), else "single-trial" (the threshold rule on two values).
	Method string `json:"method,omitempty"`
	// Over trials: how many each side had, the rank test's p-value, and the interval of the
	// shift in percent of base's median (with its coverage).
	BaseTrials int      `json:"baseTrials,omitempty"`
	NewTrials  int      `json:"newTrials,omitempty"`
	P          *float64 `json:"p,omitempty"`
	Low        *float64 `json:"low,omitempty"`
	High       *float64 `json:"high,omitempty"`
	Coverage   float64  `json:"coverage,omitempty"`
	// MoreTrials, for an inconclusive row, is about how many more trials each side needs
	// for the interval to leave the tolerance's edge (0: it cannot say).
	MoreTrials int `json:"moreTrials,omitempty"`

	newRow int // the row of NEW's table it judges, plus one (0: none)
}

// ChangeOf is the change that judged row r of NEW's table, or nil.
func (c *Comparison) ChangeOf(r int) *Change {
	for i := range c.Changes {
		if c.Changes[i].newRow == r+1 {
			return &c.Changes[i]
		}
	}
	return nil
}

// changesByRow indexes the changes by their row of the new file (0-based), as ChangeOf
// finds them, the first of a row kept.
func (c *Comparison) changesByRow() map[int]*Change {
	out := make(map[int]*Change, len(c.Changes))
	for i := range c.Changes {
		if r := c.Changes[i].newRow - 1; r >= 0 {
			if _, ok := out[r]; !ok {
				out[r] = &c.Changes[i]
			}
		}
	}
	return out
}

// Comparison is a compared pair of perf.csv files.
type Comparison struct {
	Threshold float64  `json:"threshold"`
	Changes   []Change `json:"changes"`

	unmatched error // no row joined (exit 4)
}

// ParseThreshold reads "5%", "5" (both 5 %) or "2.5%".
func ParseThreshold(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("threshold %q is not a percentage like 5%%", s)
	}
	return v, nil
}

// ReadCompareFile reads a perf.csv (or a benchmark's results CSV) to compare; it must have
// performance and model columns. Problems are an *InputError (exit 4).
func ReadCompareFile(path string) (*results.Table, error) {
	t, err := results.ReadCSVFile(path, results.MaxAppendSize)
	if err != nil {
		return nil, &results.InputError{Path: path, Err: errors.New(results.TrimPathPrefix(err, path))}
	}
	if t.Col(results.ColModel) < 0 {
		return nil, &results.InputError{Path: path, Err: fmt.Errorf("no model column to join on (columns: %s)", strings.Join(t.Header, ", "))}
	}
	return t, nil
}

type compareRow struct {
	model, metric, key, perf, status string
	trials                           []float64 // the measured trials' values, when the side has them
	row                              int       // its row in the table
}

func (r compareRow) statusOr(def string) string {
	if r.status == "" {
		return def
	}
	return r.status
}

// compareKeyColumns are the row-key columns (DefaultKeyColumns, and an experiment's
// benchctl_variant) that both tables have: a sweep's rows (batch sizes, message sizes, ...)
// are told apart by them, as collect does, and an experiment's by their variant.
func compareKeyColumns(a, b *results.Table) []string {
	var cols []string
	for _, c := range append(results.DefaultKeyColumns(), "benchctl_variant") {
		if a.Col(c) >= 0 && b.Col(c) >= 0 {
			cols = append(cols, c)
		}
	}
	return cols
}

// rowsByKey indexes a table by model, metric, the key columns and the occurrence of that
// combination. An appended perf.csv holds older jobs above newer ones: for each combination
// only the rows of the last job that has it count (benchctl_job tells jobs apart; a table
// without it is one job). order is the keys in first-seen order.
func rowsByKey(t *results.Table, keyCols []string, trials [][]float64) (rows map[string]compareRow, order []string) {
	m, me, p, job, st := t.Col(results.ColModel), t.Col(results.ColMetric), t.Col(results.ColPerformance), t.Col("benchctl_job"), t.Col(results.ColStatus)
	cols := make([]int, len(keyCols))
	for i, c := range keyCols {
		cols[i] = t.Col(c)
	}
	type group struct {
		job  string
		rows []compareRow
	}
	groups := map[string]*group{}
	var ids []string
	for r := range t.Rows {
		row := compareRow{model: strings.TrimSpace(t.Get(r, m)), metric: strings.TrimSpace(t.Get(r, me)), perf: strings.TrimSpace(t.Get(r, p)),
			status: strings.ToUpper(strings.TrimSpace(t.Get(r, st))), row: r}
		if r < len(trials) {
			row.trials = trials[r]
		}
		var parts, keyIDs []string
		for i, c := range cols {
			if v := strings.TrimSpace(t.Get(r, c)); v != "" {
				parts = append(parts, keyCols[i]+"="+v)
				keyIDs = append(keyIDs, keyCols[i]+"="+keyValue(v))
			}
		}
		row.key = strings.Join(parts, " ")
		// Joined as perf.csv writes the values (keyValue): an older perf.csv's "--steps 10"
		// meets a newer one's "'--steps 10".
		id := keyValue(row.model) + "\x00" + keyValue(row.metric) + "\x00" + strings.Join(keyIDs, " ")
		g := groups[id]
		if g == nil {
			g = &group{}
			groups[id] = g
			ids = append(ids, id)
		}
		if j := strings.TrimSpace(t.Get(r, job)); j != g.job {
			g.job, g.rows = j, nil // a later job replaces the rows of an earlier one
		}
		g.rows = append(g.rows, row)
	}
	rows = map[string]compareRow{}
	for _, id := range ids {
		g := groups[id]
		for i, row := range g.rows {
			k := id + "\x00#" + strconv.Itoa(i+1)
			if len(g.rows) > 1 {
				row.key = strings.TrimSpace(row.key + " #" + strconv.Itoa(i+1))
			}
			rows[k] = row
			order = append(order, k)
		}
	}
	return rows, order
}

// Compare joins base and new on model, metric, the key columns both have (batch_size,
// message_size, an experiment's variant, ...) and the occurrence, and judges every row.
// Rows only in one file are listed with their verdict, not treated as errors; a row that has
// a number in base but none in new counts as regressed. When no row of one matches a row of
// the other, Err says why (exit 4): a comparison of nothing must not pass a CI gate.
func Compare(base, new *results.Table, opts CompareOptions) *Comparison {
	return CompareSources(CompareSource{Table: base}, CompareSource{Table: new}, opts)
}

// CompareSource is one side of a comparison: a perf.csv, and per row (the index of the
// table's rows) the measured trials' values when the side knows them (a job's summary.json).
type CompareSource struct {
	Table  *results.Table
	Trials [][]float64
	Name   string // what it is, for messages: a file or a job
}

// CompareSources is Compare of two sources, over their trials where both have several.
func CompareSources(base, new CompareSource, opts CompareOptions) *Comparison {
	c := &Comparison{Threshold: opts.Threshold, Changes: []Change{}}
	keyCols := compareKeyColumns(base.Table, new.Table)
	brows, border := rowsByKey(base.Table, keyCols, base.Trials)
	nrows, norder := rowsByKey(new.Table, keyCols, new.Trials)
	matched := 0
	for _, k := range border {
		b := brows[k]
		ch := Change{Model: b.model, Metric: b.metric, Key: b.key, Base: b.perf}
		ch.Direction, ch.Guessed, ch.Tolerance = opts.rule(b.metric)
		n, ok := nrows[k]
		if !ok {
			ch.Verdict = VerdictOnlyBase
			c.Changes = append(c.Changes, ch)
			continue
		}
		matched++
		ch.New, ch.newRow = n.perf, n.row+1
		if len(b.trials) >= 2 && len(n.trials) >= 2 {
			judgeTrials(&ch, b.trials, n.trials, opts.alpha())
		} else {
			ch.Method = "single-trial"
			judge(&ch, ch.Tolerance)
		}
		if ok := func(s string) bool { return s == "" || s == "SUCCESS" }; ok(b.status) && !ok(n.status) {
			// It failed where it succeeded: whatever number it still reports is not a result.
			ch.Verdict, ch.Status = VerdictRegressed, b.statusOr("SUCCESS")+" -> "+n.status
		}
		c.Changes = append(c.Changes, ch)
	}
	for _, k := range norder {
		if _, ok := brows[k]; ok {
			continue
		}
		n := nrows[k]
		ch := Change{Model: n.model, Metric: n.metric, Key: n.key, New: n.perf, Verdict: VerdictOnlyNew, newRow: n.row + 1}
		ch.Direction, ch.Guessed, ch.Tolerance = opts.rule(n.metric)
		c.Changes = append(c.Changes, ch)
	}
	if matched == 0 && len(border) > 0 && len(norder) > 0 {
		c.unmatched = noMatch(base, new, keyCols, brows, border, nrows, norder)
	}
	return c
}

// noMatch says why no row joined: the columns the rows were joined on, and what each side
// has in them.
func noMatch(base, new CompareSource, keyCols []string, brows map[string]compareRow, border []string, nrows map[string]compareRow, norder []string) error {
	on := append([]string{"model", "metric"}, keyCols...)
	sample := func(rows map[string]compareRow, order []string) string {
		var out []string
		seen := map[string]bool{}
		for _, k := range order {
			r := rows[k]
			s := strings.Join(NonEmpty(r.model, r.metric, r.key), " ")
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
			if len(out) == 3 {
				break
			}
		}
		if len(seen) < len(order) && len(out) == 3 {
			out = append(out, "...")
		}
		return strings.Join(out, "; ")
	}
	onlyIn := func(a, b *results.Table) []string {
		var out []string
		for _, c := range results.DefaultKeyColumns() {
			if a.Col(c) >= 0 && b.Col(c) < 0 {
				out = append(out, c)
			}
		}
		return out
	}
	msg := fmt.Sprintf("no row of %s matches a row of %s on %s: %s has %s; %s has %s",
		results.CmpOr(new.Name, "NEW"), results.CmpOr(base.Name, "BASE"), strings.Join(on, ", "), results.CmpOr(base.Name, "BASE"), sample(brows, border), results.CmpOr(new.Name, "NEW"), sample(nrows, norder))
	if o := onlyIn(base.Table, new.Table); len(o) > 0 {
		msg += fmt.Sprintf(" (only %s has the key columns %s)", results.CmpOr(base.Name, "BASE"), strings.Join(o, ", "))
	}
	if o := onlyIn(new.Table, base.Table); len(o) > 0 {
		msg += fmt.Sprintf(" (only %s has the key columns %s)", results.CmpOr(new.Name, "NEW"), strings.Join(o, ", "))
	}
	return &results.InputError{Path: results.CmpOr(new.Name, "NEW"), Err: errors.New(msg + ": compare results of the same benchmarks, or check that the model and metric columns name them alike")}
}

// judgeTrials is the verdict over trials: the rank test says whether the change is real at
// level alpha, the Hodges-Lehmann interval of the shift (in percent of base's median) says
// how large it may be. regressed or improved: significant and the whole interval beyond the
// tolerance; no change: the whole interval within it; else inconclusive, with about how many
// more trials a side would settle it.
func judgeTrials(ch *Change, base, new []float64, alpha float64) {
	ch.Method, ch.BaseTrials, ch.NewTrials = "rank test", len(base), len(new)
	bs, ns := slices.Clone(base), slices.Clone(new)
	slices.Sort(bs)
	slices.Sort(ns)
	bm := stats.MedianOfSorted(bs)
	if bm == 0 {
		ch.Method = "single-trial"
		judge(ch, ch.Tolerance)
		return
	}
	rt := stats.MannWhitney(base, new, alpha)
	scale := 100 / math.Abs(bm)
	pct, lo, hi := rt.Shift*scale, rt.ShiftLow*scale, rt.ShiftHigh*scale
	p := rt.P
	ch.P = &p
	if !allFinite(pct, lo, hi, rt.Coverage, p) {
		// Trials near float64's limits: the shift is no percentage (its differences
		// overflow, or base's median is nearly 0). The rank test still says whether the
		// change is real; its size is not said.
		ch.Percent, ch.Low, ch.High = nil, nil, nil
		switch {
		case !allFinite(p) || rt.P >= alpha:
			ch.Verdict = VerdictInconclusive
		case (rt.Shift > 0) == (ch.Direction != results.LowerIsBetter):
			ch.Verdict = VerdictImproved
		default:
			ch.Verdict = VerdictRegressed
		}
		if !allFinite(p) {
			ch.P = nil
		}
		return
	}
	ch.Percent, ch.Low, ch.High, ch.Coverage = &pct, &lo, &hi, rt.Coverage
	better, blo, bhi := pct, lo, hi
	if ch.Direction == results.LowerIsBetter {
		better, blo, bhi = -pct, -hi, -lo
	}
	tol := ch.Tolerance
	switch {
	case rt.P < alpha && bhi < -tol:
		ch.Verdict = VerdictRegressed
	case rt.P < alpha && blo > tol:
		ch.Verdict = VerdictImproved
	case blo >= -tol && bhi <= tol:
		ch.Verdict = VerdictSame
	default:
		ch.Verdict = VerdictInconclusive
		ch.MoreTrials = moreTrials(better, blo, bhi, tol, min(len(base), len(new)))
	}
}

// moreTrials estimates how many more trials per side would take the interval off the edge
// of the tolerance it straddles: the interval's width shrinks about as 1/√n, so n must grow
// by (half-width / distance to the edge)². 0 when it cannot say (the estimate is on the edge).
func moreTrials(est, lo, hi, tol float64, n int) int {
	edge := -tol
	if !(lo < -tol && -tol < hi) && lo < tol && tol < hi {
		edge = tol
	}
	if !(lo < edge && edge < hi) { // straddles 0 only: the nearer edge
		edge = math.Copysign(tol, est)
	}
	d := math.Abs(est - edge)
	half := est - lo
	if edge > est {
		half = hi - est
	}
	if d == 0 || half <= 0 || n <= 0 {
		return 0
	}
	need := float64(n) * (half / d) * (half / d)
	if !allFinite(need) || need > 1e6 { // no estimate worth saying (NaN or ±Inf near float64's limits)
		return 0
	}
	return max(1, int(math.Ceil(need))-n)
}

// allFinite reports whether every value is a number other than ±Inf.
func allFinite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

func judge(ch *Change, threshold float64) {
	bv, bok := stats.ParsePerformance(ch.Base)
	nv, nok := stats.ParsePerformance(ch.New)
	switch {
	case bok && !nok:
		ch.Verdict = VerdictRegressed // it stopped producing a number
		return
	case !bok && nok:
		ch.Verdict = VerdictImproved
		return
	case !bok:
		ch.Verdict = VerdictNoNumber
		return
	case bv == 0:
		ch.Verdict = VerdictSame
		if nv != 0 {
			ch.Verdict = VerdictFromZero
		}
		return
	}
	pct := (nv - bv) / math.Abs(bv) * 100
	if math.IsInf(pct, 0) || math.IsNaN(pct) {
		// Too large a change for a percentage (values near float64's limits): judge by sign.
		pct = math.Copysign(math.MaxFloat64, nv-bv)
	} else {
		ch.Percent = &pct
	}
	better := pct
	if ch.Direction == results.LowerIsBetter {
		better = -pct
	}
	switch {
	case better < -threshold:
		ch.Verdict = VerdictRegressed
	case better > threshold:
		ch.Verdict = VerdictImproved
	default:
		ch.Verdict = VerdictSame
	}
}

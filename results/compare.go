package results

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Directions: which way is better.
const (
	HigherIsBetter = "higher"
	LowerIsBetter  = "lower"
	AutoDirection  = "auto" // lower for metrics that look like times (latency, seconds, ms, ...)
)

// Verdicts of a compared row.
const (
	VerdictRegressed = "regressed"
	VerdictImproved  = "improved"
	VerdictSame      = "within threshold"
	VerdictOnlyBase  = "only in base"
	VerdictOnlyNew   = "only in new"
	VerdictNoNumber  = "no number"
	VerdictFromZero  = "changed from zero" // no percentage from a base of 0; not judged
)

// CompareOptions: Threshold is in percent (5 means 5 %).
type CompareOptions struct {
	Threshold float64
	Direction string // higher (default), lower or auto
}

// Change is one row of a comparison, joined on model, metric and key columns.
type Change struct {
	Model     string   `json:"model"`
	Metric    string   `json:"metric"`
	Key       string   `json:"key,omitempty"` // the key columns that tell a sweep's rows apart, e.g. "batch_size=32"
	Base      string   `json:"base"`          // as written; "" when absent
	New       string   `json:"new"`
	Percent   *float64 `json:"percent,omitempty"` // (new-base)/|base| × 100, when both are numbers and base ≠ 0
	Direction string   `json:"direction"`
	Verdict   string   `json:"verdict"`
	Status    string   `json:"status,omitempty"` // "SUCCESS -> FAILURE" when the row's status got worse
}

// Comparison is a compared pair of perf.csv files.
type Comparison struct {
	Threshold float64  `json:"threshold"`
	Changes   []Change `json:"changes"`
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
func ReadCompareFile(path string) (*Table, error) {
	t, err := ReadCSVFile(path, maxAppendSize)
	if err != nil {
		return nil, &InputError{Path: path, Err: errors.New(trimPathPrefix(err, path))}
	}
	if t.Col(ColModel) < 0 {
		return nil, &InputError{Path: path, Err: fmt.Errorf("no model column to join on (columns: %s)", strings.Join(t.Header, ", "))}
	}
	return t, nil
}

type compareRow struct {
	model, metric, key, perf, status string
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
func compareKeyColumns(a, b *Table) []string {
	var cols []string
	for _, c := range append(DefaultKeyColumns(), "benchctl_variant") {
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
func rowsByKey(t *Table, keyCols []string) (rows map[string]compareRow, order []string) {
	m, me, p, job, st := t.Col(ColModel), t.Col(ColMetric), t.Col(ColPerformance), t.Col("benchctl_job"), t.Col(ColStatus)
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
			status: strings.ToUpper(strings.TrimSpace(t.Get(r, st)))}
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
// message_size, ...) and the occurrence, and judges every row. Rows only in one file are
// listed with their verdict, not treated as errors; a row that has a number in base but
// none in new counts as regressed.
func Compare(base, new *Table, opts CompareOptions) *Comparison {
	c := &Comparison{Threshold: opts.Threshold, Changes: []Change{}}
	keyCols := compareKeyColumns(base, new)
	brows, border := rowsByKey(base, keyCols)
	nrows, norder := rowsByKey(new, keyCols)
	for _, k := range border {
		b := brows[k]
		ch := Change{Model: b.model, Metric: b.metric, Key: b.key, Base: b.perf, Direction: direction(opts.Direction, b.metric)}
		n, ok := nrows[k]
		if !ok {
			ch.Verdict = VerdictOnlyBase
			c.Changes = append(c.Changes, ch)
			continue
		}
		ch.New = n.perf
		judge(&ch, opts.Threshold)
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
		c.Changes = append(c.Changes, Change{Model: n.model, Metric: n.metric, Key: n.key, New: n.perf, Direction: direction(opts.Direction, n.metric), Verdict: VerdictOnlyNew})
	}
	return c
}

func judge(ch *Change, threshold float64) {
	bv, bok := parsePerformance(ch.Base)
	nv, nok := parsePerformance(ch.New)
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
	if ch.Direction == LowerIsBetter {
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

// direction resolves auto for a metric.
func direction(d, metric string) string {
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

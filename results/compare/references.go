package compare

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// CheckReferences judges the rows of t against a references file's expected values
// (compare --references): a row that a reference names (model, metric, its key columns and
// variant when the reference gives them) is out of bounds below Value·(1+lower/100) or
// above Value·(1+upper/100); on the worse side (by the metric's direction) it regressed, on
// the better side it improved. A bound the reference does not give is the metric's
// tolerance on the worse side and none on the better side. A reference no row matches is
// listed as only in base.
func CheckReferences(t *results.Table, refs *manifest.References, opts CompareOptions) []Change {
	cm, cme, cp, cv := t.Col(results.ColModel), t.Col(results.ColMetric), t.Col(results.ColPerformance), t.Col("benchctl_variant")
	var out []Change
	for _, ref := range refs.References {
		ch := Change{Model: ref.Model, Metric: ref.Metric, Key: referenceKey(ref), Base: strconv.FormatFloat(ref.Value, 'g', -1, 64), Method: "reference"}
		ch.Direction, ch.Guessed, ch.Tolerance = opts.rule(ref.Metric)
		row := -1
		for r := range t.Rows {
			if strings.TrimSpace(t.Get(r, cm)) != ref.Model || strings.TrimSpace(t.Get(r, cme)) != ref.Metric {
				continue
			}
			if ref.Variant != "" && strings.TrimSpace(t.Get(r, cv)) != ref.Variant {
				continue
			}
			ok := true
			for k, v := range ref.Key {
				if c := t.Col(k); c < 0 || strings.TrimSpace(t.Get(r, c)) != strings.TrimSpace(v) {
					ok = false
					break
				}
			}
			if ok {
				row = r
				break
			}
		}
		if row < 0 {
			ch.Verdict = VerdictOnlyBase
			out = append(out, ch)
			continue
		}
		ch.New, ch.newRow = strings.TrimSpace(t.Get(row, cp)), row+1
		v, ok := stats.ParsePerformance(ch.New)
		switch {
		case !ok:
			ch.Verdict = VerdictRegressed // no number where one is expected
		case ref.Value == 0:
			ch.Verdict = VerdictSame
			if v != 0 {
				ch.Verdict = VerdictFromZero
			}
		default:
			pct := (v - ref.Value) / math.Abs(ref.Value) * 100
			ch.Percent = &pct
			lower, upper := -ch.Tolerance, 1e308 // the worse side, for a higher-is-better metric
			if ch.Direction == results.LowerIsBetter {
				lower, upper = -1e308, ch.Tolerance
			}
			if ref.Lower != nil {
				lower = *ref.Lower
			}
			if ref.Upper != nil {
				upper = *ref.Upper
			}
			worseLow := ch.Direction != results.LowerIsBetter
			switch {
			case pct < lower && worseLow, pct > upper && !worseLow:
				ch.Verdict = VerdictRegressed
			case pct < lower, pct > upper:
				ch.Verdict = VerdictImproved
			default:
				ch.Verdict = VerdictSame
			}
		}
		out = append(out, ch)
	}
	return out
}

// referenceKey is a reference's key columns and variant, as compare shows keys.
func referenceKey(r manifest.Reference) string {
	var parts []string
	for k, v := range r.Key {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	if r.Variant != "" {
		parts = append(parts, "benchctl_variant="+r.Variant)
	}
	return strings.Join(parts, " ")
}

package compare

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// baselineKey is how a perf.csv row is matched with a row of an earlier perf.csv: model,
// metric, and the values of the key columns (DefaultKeyColumns) the file has, so that a
// sweep's rows meet their own counterparts; with tags (when both files have the column),
// the set of tags, so that a run under a profiler (whose tools perf.csv's tags name) never
// meets a plain one. Values are compared as perf.csv writes them (textsafe.Cell), so that a
// model "-x" meets the "'-x" an earlier perf.csv holds.
func baselineKey(t *results.Table, r int, tags bool) string {
	var b strings.Builder
	b.WriteString(keyValue(t.Get(r, t.Col(results.ColModel))))
	b.WriteByte(0)
	b.WriteString(keyValue(t.Get(r, t.Col(results.ColMetric))))
	for _, c := range results.DefaultKeyColumns() {
		if i := t.Col(c); i >= 0 {
			if v := keyValue(t.Rows[r][i]); v != "" {
				b.WriteByte(0)
				b.WriteString(c + "=" + v)
			}
		}
	}
	if i := t.Col("tags"); tags && i >= 0 {
		b.WriteByte(0)
		b.WriteString("tags=" + tagSet(t.Rows[r][i]))
	}
	return b.String()
}

// tagSet is a tags cell as a sorted set: "pyt,echo" and madengine's "['echo', 'pyt']" are
// the same tags.
func tagSet(v string) string {
	v = strings.Trim(strings.TrimSpace(keyValue(v)), "[]")
	var tags []string
	for _, w := range strings.Split(v, ",") {
		if w = strings.Trim(strings.TrimSpace(w), `'"`); w != "" && !slices.Contains(tags, w) {
			tags = append(tags, w)
		}
	}
	slices.Sort(tags)
	return strings.Join(tags, ",")
}

// keyValue is a cell as perf.csv writes it, without surrounding blanks.
func keyValue(v string) string { return strings.TrimSpace(textsafe.Cell(v)) }

// ApplyBaseline fills perf's relative_change column from an earlier perf.csv (madengine's
// column): (performance − baseline) / baseline × 100, two decimals, for every row whose
// key is in base once with a number; others stay empty. It returns how many rows matched.
func ApplyBaseline(perf, base *results.Table) int {
	col, pc := perf.Col("relative_change"), perf.Col(results.ColPerformance)
	bp := base.Col(results.ColPerformance)
	if col < 0 || pc < 0 || bp < 0 {
		return 0
	}
	tags := perf.Col("tags") >= 0 && base.Col("tags") >= 0
	old := map[string]float64{}
	dup := map[string]bool{}
	for r := range base.Rows {
		v, ok := stats.ParsePerformance(base.Rows[r][bp])
		if !ok {
			continue
		}
		k := baselineKey(base, r, tags)
		if _, seen := old[k]; seen {
			dup[k] = true // ambiguous: several baseline rows for one key
		}
		old[k] = v
	}
	n := 0
	for r := range perf.Rows {
		k := baselineKey(perf, r, tags)
		o, ok := old[k]
		v, num := stats.ParsePerformance(perf.Rows[r][pc])
		if !ok || dup[k] || !num || o == 0 {
			continue
		}
		perf.Rows[r][col] = strconv.FormatFloat((v-o)/o*100, 'f', 2, 64)
		n++
	}
	return n
}

// ReadBaseline reads a perf.csv to compare with.
func ReadBaseline(path string) (*results.Table, error) {
	t, err := results.ReadCSVFile(path, results.MaxAppendSize)
	if err != nil {
		return nil, &results.InputError{Path: path, Err: fmt.Errorf("reading the baseline: %w", err)}
	}
	return t, nil
}

package results

import (
	"strconv"
	"strings"
)

// DefaultKeyColumns are the columns that, when a benchmark's CSV has them, tell rows apart
// beyond model and metric (a sweep over sizes, batch sizes or precisions): their values join
// the row key. Columns that vary from node to node by nature (node_rank, host, status,
// durations) must not be key columns, or no two nodes would ever share a key.
func DefaultKeyColumns() []string {
	return []string{"args", "batch_size", "seq_len", "precision", "training_precision", "dtype",
		"size_bytes", "message_size", "problem", "dataname", "figure_key"}
}

// keyer computes row keys for one table: model, metric, the key columns it has, and the
// occurrence of that combination in the table (so a sweep whose rows differ only in a column
// benchctl does not know still gets one key per row, matched by position across nodes).
type keyer struct {
	bench         string
	model, metric int
	keyCols       []int
	keyNames      []string
	seen          map[string]int
}

func newKeyer(t *Table, bench string, keyColumns []string) *keyer {
	k := &keyer{bench: bench, model: t.Col(ColModel), metric: t.Col(ColMetric)}
	for _, name := range keyColumns {
		if c := t.Col(name); c >= 0 {
			k.keyCols = append(k.keyCols, c)
			k.keyNames = append(k.keyNames, name)
		}
	}
	return k
}

// rowModel is the row's model, or the benchmark's name when the CSV has none.
func (k *keyer) rowModel(t *Table, r int) string {
	if m := strings.TrimSpace(t.Get(r, k.model)); m != "" {
		return m
	}
	return k.bench
}

// key returns row r's key. Call it for rows in order: occurrences are counted.
func (k *keyer) key(t *Table, r int) (key string, occurrence int) {
	var b strings.Builder
	b.WriteString(k.rowModel(t, r))
	b.WriteByte(0)
	b.WriteString(strings.TrimSpace(t.Get(r, k.metric)))
	for i, c := range k.keyCols {
		b.WriteByte(0)
		b.WriteString(k.keyNames[i])
		b.WriteByte('=')
		b.WriteString(strings.TrimSpace(t.Rows[r][c]))
	}
	base := b.String()
	if k.seen == nil {
		k.seen = map[string]int{}
	}
	k.seen[base]++
	occurrence = k.seen[base]
	if occurrence > 1 {
		base += "\x00#" + strconv.Itoa(occurrence)
	}
	return base, occurrence
}

// identity is the key columns of row r, for summary.json.
func (k *keyer) identity(t *Table, r int) map[string]string {
	if len(k.keyCols) == 0 {
		return nil
	}
	m := make(map[string]string, len(k.keyCols))
	for i, c := range k.keyCols {
		m[k.keyNames[i]] = t.Rows[r][c]
	}
	return m
}

// readableKey turns a key into "model metric [col=val ...] #n" for messages.
func readableKey(key string) string {
	return strings.Join(strings.FieldsFunc(key, func(r rune) bool { return r == 0 }), " ")
}

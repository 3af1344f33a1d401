package results

import "strings"

// Table is a CSV as written: a header and rows of strings. Values are never re-formatted
// ("007" stays "007", "1.50" stays "1.50"); every row has len(Header) fields.
type Table struct {
	Header []string
	Rows   [][]string
	// Total is how many rows the file had when more than the Rows kept were read (a
	// node's CSV is capped at MaxCSVRows); 0 when not counted.
	Total int
}

// Col returns the index of the column named name, or -1. The names benchctl gives meaning
// to (model, performance, metric, status) match case-insensitively; others exactly.
func (t *Table) Col(name string) int {
	for i, h := range t.Header {
		if h == name {
			return i
		}
	}
	if isWellKnown(name) {
		for i, h := range t.Header {
			if strings.EqualFold(h, name) {
				return i
			}
		}
	}
	return -1
}

func isWellKnown(name string) bool {
	switch name {
	case ColModel, ColPerformance, ColMetric, ColStatus:
		return true
	}
	return false
}

// Get returns row r's value in column c, or "" when c is -1.
func (t *Table) Get(r, c int) string {
	if c < 0 {
		return ""
	}
	return t.Rows[r][c]
}

// Columns of a benchmark's results CSV that benchctl reads.
const (
	ColModel       = "model"
	ColPerformance = "performance"
	ColMetric      = "metric"
	ColStatus      = "status"
)

// HasPerformance reports whether a performance value counts as a result: not blank.
func HasPerformance(v string) bool { return strings.TrimSpace(v) != "" }

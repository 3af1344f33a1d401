// Package mean is the running mean that a run's telemetry (package runner) and the report
// of it (package results) both keep: one type, so that both average alike.
package mean

// Mean is a running mean; the zero Mean has no values.
type Mean struct {
	sum float64
	n   int
}

// Add takes one more value.
func (m *Mean) Add(v float64) { m.sum += v; m.n++ }

// Value is the mean of the values so far, or nil without any.
func (m Mean) Value() *float64 {
	if m.n == 0 {
		return nil
	}
	v := m.sum / float64(m.n)
	return &v
}

// N is how many values it has taken.
func (m Mean) N() int { return m.n }

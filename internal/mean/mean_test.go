package mean

import "testing"

func TestMean(t *testing.T) {
	var m Mean
	if m.Value() != nil || m.N() != 0 {
		t.Fatal("an empty mean has a value")
	}
	for _, v := range []float64{1, 2, 6} {
		m.Add(v)
	}
	if v := m.Value(); v == nil || *v != 3 || m.N() != 3 {
		t.Errorf("%v over %d", v, m.N())
	}
}

package timing

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	d := []time.Duration{5, 1, 3}
	if got := Median(d); got != 3 || d[0] != 5 {
		t.Fatalf("median %v, input %v (must not be reordered)", got, d)
	}
	if got := Median([]time.Duration{4, 1, 3, 2}); got != 3 {
		t.Fatalf("even count: %v", got)
	}
}

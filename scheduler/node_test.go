package scheduler

import (
	"strconv"
	"testing"
)

func TestTwoJobsHaveTwoPortRanges(t *testing.T) {
	if a, b := portBase("1"), portBase("2"); a == b {
		t.Errorf("two jobs share a port range")
	}
}

// Every job's ports (MASTER_PORT to +17) stay below Linux's default ephemeral range
// (32768-60999), where an outgoing connection could hold the port rank 0 listens on;
// and the ranges are many.
func TestPortBaseAvoidsEphemeralPorts(t *testing.T) {
	seen := map[int]bool{}
	for i := range 200000 {
		b := portBase(strconv.Itoa(i))
		if b < 20000 || b+17 >= 32768 || (b-20000)%20 != 0 {
			t.Fatalf("job %d: ports %d-%d", i, b, b+17)
		}
		seen[b] = true
	}
	if len(seen) != portRanges {
		t.Errorf("%d distinct ranges, want %d", len(seen), portRanges)
	}
}

package compare

import (
	"testing"
)

// perf.csv now writes "--steps 10" as "'--steps 10": a perf.csv of an older benchctl (or a
// results CSV) and a new one still meet on model, metric and key columns, in compare and
// in collect --baseline.
func TestNeutralisedCellsStillMatch(t *testing.T) {
	old := table("model,metric,args,performance", "-m,x,--steps 10,100", "n,@y,--steps 20,100")
	newer := table("model,metric,args,performance", "'-m,x,'--steps 10,110", "n,'@y,'--steps 20,90")
	c := Compare(old, newer, CompareOptions{Threshold: 5})
	for _, ch := range c.Changes {
		if ch.Verdict == VerdictOnlyBase || ch.Verdict == VerdictOnlyNew {
			t.Errorf("%s %s %s: %s", ch.Model, ch.Metric, ch.Key, ch.Verdict)
		}
	}
	perf := table("model,metric,args,performance,relative_change", "-m,x,--steps 10,110,", "n,@y,--steps 20,90,")
	base := table("model,metric,args,performance", "'-m,x,'--steps 10,100", "n,'@y,'--steps 20,100")
	if n := ApplyBaseline(perf, base); n != 2 {
		t.Errorf("baseline matched %d of 2 rows: %v", n, perf.Rows)
	}
}

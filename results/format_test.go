package results

import (
	"encoding/json"
	"strings"
	"testing"
)

// summary.json (and collect -o json) has [] for every list it always carries, never null,
// also for a job folder where nothing was found; the summary itself is left as it was.
func TestSummaryListsAreNeverNull(t *testing.T) {
	s := &Summary{Job: "1", Benchmarks: []BenchmarkSummary{{Name: "b", Rows: []RowSummary{{Model: "m"}}}}}
	data, err := EncodeSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "null"); n != 1 || !strings.Contains(string(data), `"winner": null`) { // no winner: the one null
		t.Errorf("summary.json has a null list:\n%s", data)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"attempts", "nodeFailures", "benchmarks", "problems"} {
		if _, ok := back[k].([]any); !ok {
			t.Errorf("%s is %v, want a list", k, back[k])
		}
	}
	if s.Problems != nil || s.Benchmarks[0].Failed != nil || s.Benchmarks[0].Rows[0].Stats.Values != nil {
		t.Error("encoding changed the summary")
	}
}

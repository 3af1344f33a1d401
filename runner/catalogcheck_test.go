package runner

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func madBench(name, args string) manifest.Benchmark {
	return manifest.Benchmark{Name: name, Model: &manifest.Model{Name: name, Args: args, Scripts: "scripts/x/run.sh",
		Catalog: "/a/models.json", File: "/a/scripts/x/models.json", Line: 3,
		Data: "ds", DataSets: []manifest.DataSet{{Name: "ds", Source: "/a/data", Size: "1.0K"}}}}
}

// The nodes of a job compare what they resolved from the catalog with rank 0's: the same
// benchmarks agree wherever the checkout lies and whatever rank 0 measured; another list, or
// another model setting, fails naming the digests and this node's benchmarks.
func TestCompareCatalog(t *testing.T) {
	rank0 := []manifest.Benchmark{madBench("gen_a", "--x 1"), madBench("gen_b", "")}
	d := catalogDigest(rank0)

	elsewhere := []manifest.Benchmark{madBench("gen_a", "--x 1"), madBench("gen_b", "")}
	for _, b := range elsewhere {
		b.Model.Catalog, b.Model.File, b.Model.Line = "/b/models.json", "/b/scripts/x/models.json", 9
		b.Model.DataSets[0].Source, b.Model.DataSets[0].Size = "/b/data", ""
	}
	if err := compareCatalog(d, elsewhere); err != nil {
		t.Fatalf("the same benchmarks at another path: %v", err)
	}
	for name, other := range map[string][]manifest.Benchmark{
		"one more":     {madBench("gen_a", "--x 1"), madBench("gen_b", ""), madBench("gen_c", "")},
		"one less":     {madBench("gen_a", "--x 1")},
		"other order":  {madBench("gen_b", ""), madBench("gen_a", "--x 1")},
		"other args":   {madBench("gen_a", "--x 2"), madBench("gen_b", "")},
		"none":         nil,
		"a native one": {{Name: "gen_a"}, madBench("gen_b", "")},
	} {
		err := compareCatalog(d, other)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "rank 0's are "+d[:19]) || !strings.Contains(msg, "get_models_json.py") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := compareCatalog("", rank0); err == nil || !strings.Contains(err.Error(), "rank 0's are (none)") {
		t.Errorf("rank 0 sent nothing: %v", err)
	}
	many := make([]manifest.Benchmark, 500)
	for i := range many {
		many[i] = madBench(strings.Repeat("m", 60), "")
	}
	if err := compareCatalog(d, many); err == nil || len(err.Error()) > 1500 {
		t.Errorf("500 benchmarks: %d bytes", len(err.Error()))
	}
}

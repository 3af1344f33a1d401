package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// A run handed no catalog cannot clone a url model, and says what it lacks instead of
// running the model without its code.
func TestARunWithoutACatalogRefusesAURLModel(t *testing.T) {
	cat := Options{}.catalog()
	_, err := cat.Clone(context.Background(), t.TempDir(), manifest.Benchmark{Name: "pyt_x", Model: &manifest.Model{URL: "https://host/org/x.git"}})
	if err == nil || !strings.Contains(err.Error(), "pyt_x") || !strings.Contains(err.Error(), "Options.Catalog") {
		t.Fatalf("%v", err)
	}
	benches := []manifest.Benchmark{{Name: "b", Model: &manifest.Model{DataSets: []manifest.DataSet{{Source: t.TempDir()}}}}}
	cat.MeasureData(benches)
	if s := benches[0].Model.DataSets[0].Size; s != "" {
		t.Errorf("no catalog measured %q", s)
	}
}

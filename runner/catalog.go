package runner

import (
	"context"
	"fmt"

	"github.com/benchctl/benchctl/manifest"
)

// Catalog is what a node's run asks of the benchmark catalog (package models, handed in by
// the caller: runner and models are siblings and do not import each other).
type Catalog interface {
	// Clone clones a MAD model's url into dir (the job folder's clones/) once, and returns
	// the commit it checked out. A clone already there is reused.
	Clone(ctx context.Context, dir string, b manifest.Benchmark) (commit string, err error)
	// MeasureData records, in place, the size of each data set of benches that has none yet
	// (job.json, perf.csv's data_size). It may take a while on a large folder and never
	// fails: a size it cannot tell stays "".
	MeasureData(benches []manifest.Benchmark)
}

// noCatalog is the Catalog of a run given none: its benchmarks have no url to clone and no
// data set to measure; a url model is an error saying so.
type noCatalog struct{}

func (noCatalog) Clone(_ context.Context, _ string, b manifest.Benchmark) (string, error) {
	// The caller's wiring, not the user's input: a plain failure (exit 1), not bad input.
	return "", fmt.Errorf("runner: Options.Catalog is not set, and %s is a MAD model of a url: the run needs the catalog to clone it (models.JobCatalog{})", b.Name)
}

func (noCatalog) MeasureData([]manifest.Benchmark) {}

func (o Options) catalog() Catalog {
	if o.Catalog == nil {
		return noCatalog{}
	}
	return o.Catalog
}

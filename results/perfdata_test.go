package results

import (
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// A MAD model with data: perf.csv's data columns say which data sets, from which provider,
// how large, and how long their download took (none: a local path is mounted).
func TestPerfCSVDataColumns(t *testing.T) {
	model := map[string]any{"catalog": "models.json", "dataSets": []any{
		map[string]any{"name": "fixture_data", "provider": "local", "source": "/nfs/x", "home": "/data_dlm_0", "size": "44"},
		map[string]any{"name": "wiki", "provider": "local", "source": "/nfs/w", "home": "/data_dlm_1", "size": "1.5G"}}}
	j := jobdirtest.NewJob(t, "1", []string{"h0"}, map[string]any{"name": "t", "gpu": map[string]any{"count": "all"},
		"benchmarks": []any{map[string]any{"name": "b", "results": "b.csv", "model": model}}})
	j.Version = 1
	job := jobdirtest.Job(t, jobdir.Layout{Shared: t.TempDir()}.Job("1", 0), j).Path
	writeNode(t, job, 0, "success", "model,performance\nb,1\n")
	perf := PerfTable(aggregate(t, job))
	row := map[string]string{}
	for i, h := range perf.Header {
		row[h] = perf.Rows[0][i]
	}
	for col, want := range map[string]string{
		"dataname": "fixture_data,wiki", "data_provider_type": "local,local", "data_size": "44,1.5G", "data_download_duration": "0,0",
	} {
		if row[col] != want {
			t.Errorf("%s = %q, want %q", col, row[col], want)
		}
	}
}

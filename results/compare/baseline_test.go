package compare

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/results"
)

func TestApplyBaseline(t *testing.T) {
	perf := &results.Table{Header: []string{"model", "metric", "batch_size", "performance", "relative_change"}, Rows: [][]string{
		{"m", "tok/s", "8", "110", ""},
		{"m", "tok/s", "16", "150", ""},
		{"m", "latency", "", "9", ""},
		{"new", "tok/s", "", "5", ""},
		{"m", "tok/s", "32", "x", ""},
	}}
	base, err := results.ParseCSV("base.csv", []byte("model,n_gpus,metric,batch_size,performance,status\nm,8,tok/s,8,100,SUCCESS\nm,8,tok/s,16,200,SUCCESS\nm,8,latency,,10,SUCCESS\nm,8,tok/s,32,1,SUCCESS\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := ApplyBaseline(perf, base); n != 3 {
		t.Errorf("matched %d rows, want 3", n)
	}
	var got []string
	for _, r := range perf.Rows {
		got = append(got, r[4])
	}
	if strings.Join(got, "|") != "10.00|-25.00|-10.00||" {
		t.Fatalf("relative_change %q", got)
	}
}

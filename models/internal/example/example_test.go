package example

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestWriteResultsUnsetDir(t *testing.T) {
	t.Chdir(t.TempDir())
	var stderr bytes.Buffer
	path, err := WriteResults(NodeEnv{NNodes: 1}, "x.csv", []string{"extra"}, []Result{{Model: "m", Performance: "1.5", Metric: "GB/s", Status: "SUCCESS", Extra: []string{"e"}}}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if path != "x.csv" || !strings.Contains(stderr.String(), "BENCHCTL_OUTPUT_DIR is not set") {
		t.Errorf("path %q, stderr %q", path, stderr.String())
	}
	data, _ := os.ReadFile("x.csv")
	if want := "model,performance,metric,status,node_rank,nnodes,extra\nm,1.5,GB/s,SUCCESS,0,1,e\n"; string(data) != want {
		t.Errorf("x.csv = %q, want %q", data, want)
	}
}

package example

import (
	"bytes"
	"flag"
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

func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		ok   bool
	}{{nil, 0, true}, {[]string{"-n", "3"}, 0, true}, {[]string{"-h"}, 0, false}, {[]string{"-bogus"}, 2, false}, {[]string{"stray"}, 2, false}} {
		var out bytes.Buffer
		fs := flag.NewFlagSet("prog", flag.ContinueOnError)
		fs.SetOutput(&out)
		fs.Int("n", 1, "")
		code, ok := ParseFlags(fs, c.args)
		if code != c.code || ok != c.ok {
			t.Errorf("%v: code %d ok %v", c.args, code, ok)
		}
		if len(c.args) == 1 && c.args[0] == "stray" && !strings.Contains(out.String(), `unexpected arguments ["stray"]`) {
			t.Errorf("stray argument message: %q", out.String())
		}
	}
}

func TestNewFlagSetUsage(t *testing.T) {
	var buf strings.Builder
	fs := NewFlagSet("demo", "Does a demo.", &buf)
	fs.Int("n", 1, "how many")
	if code, ok := ParseFlags(fs, []string{"-h"}); ok || code != 0 {
		t.Fatalf("-h: code %d ok %v", code, ok)
	}
	if out := buf.String(); !strings.HasPrefix(out, "usage: demo [flags]\nDoes a demo.\n") || !strings.Contains(out, "how many") {
		t.Fatalf("usage: %q", out)
	}
}

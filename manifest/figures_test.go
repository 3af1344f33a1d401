package manifest

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
)

// A benchmark's figures and success are read as written (the figures' results file is
// figures.csv, their directions join the metrics rules after the user's); each bad one is
// told at its line and field path, exit 4.
func TestFiguresAndSuccess(t *testing.T) {
	const head = "name: t\nimage: {ref: x}\nmetrics: {tok_s: {better: lower}}\nbenchmarks:\n- name: b\n  command: [x]\n"
	m, _, err := Load(writeManifest(t, "m.yaml", head+"  figures:\n  - {metric: tok_s, pattern: 'tok/s: (?P<value>\\S+)', unit: tok/s, better: higher, min: 1e2, max: 5000}\n"+
		"  - {parser: nccl-tests, from: logs/nccl.txt}\n  success: {require: [PASSED], forbid: [FAILED]}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := m.Benchmarks[0]
	if len(b.Figures) != 2 || *b.Figures[0].Min != 100 || *b.Figures[0].Max != 5000 || b.Figures[1].Source() != "logs/nccl.txt" ||
		b.Success.Forbid[0] != "FAILED" || b.Results != "figures.csv" {
		t.Fatalf("%+v %+v %q", b.Figures, b.Success, b.Results)
	}
	if len(m.Metrics) < 3 || m.Metrics[0].Metric != "tok_s" || m.Metrics[0].Better != BetterLower || m.Metrics[1].Better == "" {
		t.Errorf("metrics rules (the user's first): %+v", m.Metrics)
	}
	for _, c := range []struct{ body, want string }{
		{"  figures: [{metric: m, pattern: '(\\d+)'}]\n", "m.yaml:7: benchmarks[0].figures[0].pattern: \"(\\\\d+)\" has no named group (?P<value>...)"},
		{"  figures: [{metric: m, pattern: '(?P<value>\\d*)'}]\n", "benchmarks[0].figures[0].pattern: \"(?P<value>\\\\d*)\" matches an empty line"},
		{"  figures: [{parser: nccl}]\n", "benchmarks[0].figures[0].parser: \"nccl\" is not a parser benchctl has"},
		{"  figures: [{parser: hpl, from: /etc/passwd}]\n", "benchmarks[0].figures[0].from"},
		{"  figures: [{parser: hpl, min: .nan}]\n", "benchmarks[0].figures[0].min: must be a number"},
		{"  figures: [{parser: hpl, min: 0x10}]\n", "benchmarks[0].figures[0].min: must be a number"},
		{"  figures: [{parser: hpl, min: 1e999}]\n", "benchmarks[0].figures[0].min: must be a number"},
		{"  figures: [{parser: hpl, min: \"5\"}]\n", "benchmarks[0].figures[0].min: must be a number"},
		{"  figures: [{parser: hpl, speed: 3}]\n", "benchmarks[0].figures[0]"},
		{"  success: {require: ['(']}\n", "benchmarks[0].success.require[0]: \"(\" is not a pattern benchctl reads"},
		{"  figures: [" + strings.Repeat("{parser: hpl}, ", 65) + "]\n", "benchmarks[0].figures: 65 figures, more than 64"},
		{"  results: perf.csv\n  figures: [{parser: hpl}]\n", "benchmarks[0].results: the figures are written to figures.csv: drop results"},
	} {
		_, _, err := Load(writeManifest(t, "m.yaml", head+c.body), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || exitcode.Of(err) != exitcode.Invalid {
			t.Errorf("%q:\n got %v\nwant %q", c.body, err, c.want)
		}
	}
}

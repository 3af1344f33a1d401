package figures

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, s Spec, file string) []Row {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := Read(s, f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// rowText is a row as one line, for comparing: metric key=... value unit better.
func rowText(r Row) string {
	return strings.Join(strings.Fields(fmt.Sprintf("%s %s %s %s %s", r.Metric, r.KeyText(), r.Text, r.Unit, r.Better)), " ")
}

func want(t *testing.T, rows []Row, lines ...string) {
	t.Helper()
	var got []string
	for _, r := range rows {
		got = append(got, rowText(r))
	}
	if strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
	}
}

// nccl-tests (the current format, with root and #wrong): a size's line gives time, algbw
// and busbw out of place and in place, keyed by size, type and redop; and the average bus
// bandwidth.
func TestNCCLTests(t *testing.T) {
	rows := read(t, Spec{Parser: ParserNCCL}, "nccl-allreduce.txt")
	if len(rows) != 3*6+1 {
		t.Fatalf("%d rows", len(rows))
	}
	want(t, append(rows[12:18], rows[18]),
		"time_out_of_place size_bytes=134217728 type=float redop=sum 1234.5 us lower",
		"algbw_out_of_place size_bytes=134217728 type=float redop=sum 108.72 GB/s higher",
		"busbw_out_of_place size_bytes=134217728 type=float redop=sum 190.26 GB/s higher",
		"time_in_place size_bytes=134217728 type=float redop=sum 1230.1 us lower",
		"algbw_in_place size_bytes=134217728 type=float redop=sum 109.11 GB/s higher",
		"busbw_in_place size_bytes=134217728 type=float redop=sum 190.95 GB/s higher",
		"avg_busbw 63.4221 GB/s higher")
}

// rccl-tests of an older format (no root column, "error" for #wrong) and an alltoall whose
// in-place run was skipped (N/A): the out-of-place figures only.
func TestRCCLTestsOlderFormat(t *testing.T) {
	rows := read(t, Spec{Parser: ParserRCCL}, "rccl-alltoall-old.txt")
	want(t, rows[:3],
		"time_out_of_place size_bytes=1024 type=float redop=none 45.20 us lower",
		"algbw_out_of_place size_bytes=1024 type=float redop=none 0.02 GB/s higher",
		"busbw_out_of_place size_bytes=1024 type=float redop=none 0.02 GB/s higher")
	if len(rows) != 3*3+1 || rows[9].Metric != "avg_busbw" || rows[9].Value != 0.0467 {
		t.Fatalf("%d rows: %v", len(rows), rows)
	}
}

// The OSU micro-benchmarks: each column a metric keyed by message size; latencies lower is
// better, bandwidths and rates higher; Iterations is not a figure.
func TestOSU(t *testing.T) {
	want(t, read(t, Spec{Parser: ParserOSU}, "osu-latency.txt"),
		"latency message_size=1 1.52 us lower", "latency message_size=2 1.51 us lower", "latency message_size=4194304 402.17 us lower")
	want(t, read(t, Spec{Parser: ParserOSU}, "osu-allreduce-full.txt"),
		"avg_latency message_size=4 3.11 us lower", "min_latency message_size=4 2.95 us lower", "max_latency message_size=4 3.30 us lower",
		"avg_latency message_size=1048576 512.40 us lower", "min_latency message_size=1048576 505.10 us lower", "max_latency message_size=1048576 520.02 us lower")
	want(t, read(t, Spec{Parser: ParserOSU}, "osu-mbw-mr.txt"),
		"mb_per_s message_size=1 2.89 MB/s higher", "messages_per_s message_size=1 2890123.45 Messages/s higher",
		"mb_per_s message_size=65536 12034.56 MB/s higher", "messages_per_s message_size=65536 183633.12 Messages/s higher")
}

// HPC Challenge's summary section: every NAME=NUMBER, with units and directions by name;
// what is not a number (FailureNotes) and what is outside the section is not a figure.
func TestHPCC(t *testing.T) {
	rows := read(t, Spec{Parser: ParserHPCC}, "hpccoutf.txt")
	got := map[string]string{}
	for _, r := range rows {
		got[r.Metric] = rowText(r)
	}
	for _, w := range []string{"HPL_Tflops 0.00173218 Tflop/s higher", "HPL_time 0.384752 s lower", "StarSTREAM_Triad 3.72022 GB/s higher",
		"PTRANS_GBs 0.472012 GB/s higher", "MPIRandomAccess_GUPs 0.00283651 GUP/s higher", "MPIRandomAccess_ErrorsFraction 0 lower",
		"RandomlyOrderedRingLatency_usec 2.31458 us lower", "StarDGEMM_Gflops 4.21733 Gflop/s higher", "CommWorldProcs 6", "Success 1"} {
		name, _, _ := strings.Cut(w, " ")
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if _, ok := got["FailureNotes"]; ok || len(rows) != 17 {
		t.Errorf("%d rows: %v", len(rows), got)
	}
}

// HPL: each result line after its header, keyed by the variant and its N, NB, P, Q.
func TestHPL(t *testing.T) {
	want(t, read(t, Spec{Parser: ParserHPL}, "hpl.txt"),
		"time problem=WR11C2R4 N=1000 NB=64 P=1 Q=2 0.05 s lower", "gflops problem=WR11C2R4 N=1000 NB=64 P=1 Q=2 1.3712e+01 Gflop/s higher",
		"time problem=WR11C2R4 N=2000 NB=64 P=1 Q=2 0.31 s lower", "gflops problem=WR11C2R4 N=2000 NB=64 P=1 Q=2 1.7201e+01 Gflop/s higher")
}

// A pattern: a row per match, its other named groups the key; a value that is not a plain
// decimal number (hex, Inf, NaN, a thousands separator, past float64) is no row.
func TestPattern(t *testing.T) {
	s := Spec{Metric: "tokens_per_second", Pattern: `^batch (?P<batch_size>\d+): (?P<value>\S+) tok/s`, Unit: "tok/s", Better: BetterHigh}
	text := "warmup\nbatch 1: 120.5 tok/s\nbatch 8: 9.1e2 tok/s\nbatch 9: 0x1p4 tok/s\nbatch 10: Inf tok/s\nbatch 11: NaN tok/s\nbatch 12: 1,234 tok/s\nbatch 13: 1e999 tok/s\r\n"
	rows, err := Read(s, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want(t, rows, "tokens_per_second batch_size=1 120.5 tok/s higher", "tokens_per_second batch_size=8 9.1e2 tok/s higher")
}

// Every bad spec is told with the field and what to do.
func TestBadSpecs(t *testing.T) {
	one, two := 1.0, 2.0
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{Metric: "m", Pattern: `(?P<value>\d+`}, "pattern: \"(?P<value>\\\\d+\" is not a pattern benchctl reads (RE2, Go's regexp): missing closing )"},
		{Spec{Metric: "m", Pattern: `(\d+)`}, "has no named group (?P<value>...)"},
		{Spec{Metric: "m", Pattern: `(?P<value>\d*)`}, "matches an empty line"},
		{Spec{Metric: "m", Pattern: `(?P<value>\d+)(?=x)`}, "not a pattern benchctl reads"},
		{Spec{Metric: "m", Pattern: "(?P<value>" + strings.Repeat("a", 5000) + ")"}, "more than 4096"},
		{Spec{Pattern: `(?P<value>\d+)`}, "metric: \"\": give the figure's metric name"},
		{Spec{Metric: "m", Pattern: `(?P<value>\d+)`, Parser: ParserHPL}, "parser: give a pattern or a parser, not both"},
		{Spec{Parser: "nccl"}, "\"nccl\" is not a parser benchctl has (allowed: nccl-tests, rccl-tests, osu, hpcc, hpl)"},
		{Spec{Parser: ParserOSU, Metric: "x"}, "a parser names its own metrics"},
		{Spec{}, "give a pattern with a named group"},
		{Spec{Parser: ParserHPL, Better: "up"}, "better: \"up\": higher or lower"},
		{Spec{Parser: ParserHPL, From: "/etc/passwd"}, "from: \"/etc/passwd\": stdout, or a file's path relative to the benchmark's output folder"},
		{Spec{Parser: ParserHPL, From: "../x"}, "from: \"../x\""},
		{Spec{Parser: ParserHPL, From: "a/../../x"}, "from: \"a/../../x\""},
		{Spec{Parser: ParserHPL, Min: &two, Max: &one}, "max: 1 is below min 2"},
	} {
		var got []string
		for _, p := range c.s.Check() {
			got = append(got, p.Field+": "+p.Msg)
		}
		if !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
	if p := (Spec{Parser: ParserHPCC, From: "hpccoutf.txt"}).Check(); p != nil {
		t.Errorf("a good spec: %v", p)
	}
	if p := (Success{Require: []string{"PASSED", "("}, Forbid: make([]string, MaxPatterns+1)}).Check(); len(p) != 2 || p[0].Field != "require[1]" || p[1].Field != "forbid" {
		t.Errorf("success problems %v", p)
	}
}

// The largest input: a line of 1 MiB is read in pieces (no row from a cut number, no
// unbounded memory), and a pattern that matches every line stops at MaxRows, saying so.
func TestBounds(t *testing.T) {
	long := strings.Repeat("x", 1<<20) + " value 7\nvalue 8\n"
	rows, err := Read(Spec{Metric: "m", Pattern: `value (?P<value>\d+)`}, strings.NewReader(long))
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %v", err, rows)
	}
	many := strings.Repeat("v 1\n", MaxRows+10)
	rows, err = Read(Spec{Metric: "m", Pattern: `v (?P<value>\d)`}, strings.NewReader(many))
	if err != ErrTooManyRows || len(rows) != MaxRows {
		t.Fatalf("%v, %d rows", err, len(rows))
	}
}

// Success: every require must match a line, no forbid any; the first forbidden line is
// quoted with its number (a 6,000-character one cut), a require that nothing matched named.
func TestSuccess(t *testing.T) {
	s := Success{Require: []string{`Success=1`, `PASSED`}, Forbid: []string{`FAILED`, `(?i)out of memory`}}
	for _, c := range []struct{ text, want string }{
		{"Success=1\n... PASSED\n", ""},
		{"Success=1\n", `no line of the output matches success.require[1] "PASSED"`},
		{"Success=1\nPASSED\nHIP Out Of Memory " + strings.Repeat("x", 6000) + "\n", `line 3 matches success.forbid[1] "(?i)out of memory": "HIP Out Of Memory xxx`},
		{"1 FAILED\n", `line 1 matches success.forbid[0] "FAILED"`},
	} {
		got, err := s.Judge(strings.NewReader(c.text))
		if err != nil || !strings.HasPrefix(got, c.want) || (c.want == "" && got != "") || len(got) > 400 {
			t.Errorf("%.40q: %q %v, want %q", c.text, got, err, c.want)
		}
	}
}

// A figure with no rows is missing, one out of its bounds fails with the value and the key.
func TestVerdict(t *testing.T) {
	lo, hi := 100.0, 200.0
	s := Spec{Metric: "busbw", Pattern: `x (?P<value>\d+)`, Min: &lo, Max: &hi}
	if v := s.Verdict(nil); v != `figure busbw: no line of stdout matches "x (?P<value>\\d+)"` {
		t.Errorf("%q", v)
	}
	if v := (Spec{Parser: ParserNCCL, From: "out.txt"}).Verdict(nil); v != "figure nccl-tests: the nccl-tests parser found no figure in out.txt" {
		t.Errorf("%q", v)
	}
	rows := []Row{{Metric: "busbw", Value: 150, Text: "150"}, {Metric: "busbw", Value: 90, Text: "90", Key: []Pair{{"size_bytes", "8"}}}}
	if v := s.Verdict(rows); v != "figure busbw: busbw (size_bytes=8) is 90, below its min 100" {
		t.Errorf("%q", v)
	}
	rows[1].Value, rows[1].Text = 250, "250"
	if v := s.Verdict(rows); v != "figure busbw: busbw (size_bytes=8) is 250, above its max 200" {
		t.Errorf("%q", v)
	}
	if v := s.Verdict(rows[:1]); v != "" {
		t.Errorf("%q", v)
	}
}

// A real hpccoutf.txt (hpcc 1.5.0 under Debian's Open MPI, 6 ranks over 3 of the testbed's
// containers, recorded on the test machine): every number of the summary section is a
// figure, what is not a number (HPL_cpfact=R) is not.
func TestHPCCRecorded(t *testing.T) {
	rows := read(t, Spec{Parser: ParserHPCC}, "hpccoutf-recorded-6ranks.txt")
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Metric] = r
	}
	for name, v := range map[string]float64{"Success": 1, "CommWorldProcs": 6, "HPL_Tflops": 0.0024156, "PTRANS_GBs": 0.523578, "StarDGEMM_Gflops": 2.83602} {
		if r, ok := got[name]; !ok || r.Value != v {
			t.Errorf("%s: %+v, want %g", name, r, v)
		}
	}
	if _, ok := got["HPL_cpfact"]; ok || len(rows) < 100 {
		t.Errorf("%d rows", len(rows))
	}
	if got["HPL_Tflops"].Better != BetterHigh || got["PTRANS_time"].Better != BetterLow {
		t.Errorf("directions: %+v %+v", got["HPL_Tflops"], got["PTRANS_time"])
	}
}

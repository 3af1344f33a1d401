package collect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benchctl/benchctl/host"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./results/collect -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./results/collect -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// schedulerFunc is a jobdir.Scheduler that answers JobState with a function; Collect
// never waits.
type schedulerFunc func(context.Context, string) (jobdir.SchedulerState, error)

var _ jobdir.Scheduler = schedulerFunc(nil)

func (f schedulerFunc) JobState(ctx context.Context, id string) (jobdir.SchedulerState, error) {
	return f(ctx, id)
}

func (f schedulerFunc) Wait(context.Context, string, func(jobdir.SchedulerState, error)) (jobdir.SchedulerState, error) {
	return jobdir.SchedulerState{}, errors.New("collect does not wait")
}

// sched is a Slurm that says state of every job ("": it does not know the job).
func sched(state string, active bool, err error) schedulerFunc {
	return func(context.Context, string) (jobdir.SchedulerState, error) {
		st := jobdir.SchedulerState{Known: state != "", State: state, Active: active}
		if st.Known {
			st.Scheduler = "Slurm"
		}
		return st, err
	}
}

// record is a node record as three nodes of one kind would write it.
func record(rank int, kernel string) *jobdir.NodeRecord {
	return &jobdir.NodeRecord{Rank: rank, Host: fmt.Sprintf("h%d", rank),
		Machine: host.Facts{Hostname: fmt.Sprintf("host%d.example", rank), Kernel: host.Kernel{Release: kernel, Version: "#1 SMP"},
			OS: host.OS{PrettyName: "Ubuntu 22.04.4 LTS"}, MemoryBytes: 2 << 40,
			Network: []host.NetDevice{{Name: "mlx5_0", Firmware: "28.39.1002", NodeGUID: fmt.Sprintf("guid%d", rank),
				Ports: []host.Port{{Number: 1, State: "ACTIVE", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}}}}},
		GPU:      jobdir.GPURecord{Vendor: "amd", Driver: "6.8.5", Devices: []jobdir.GPUDevice{{Index: 0, Name: "MI300X", Arch: "gfx942", PCIBusID: fmt.Sprintf("0000:%02x:00.0", rank)}}},
		Benchctl: "v1"}
}

func timeAfter(seconds int) <-chan time.Time { return time.After(time.Duration(seconds) * time.Second) }

// writeHugeJob writes job.json with a world and as many hosts, and benchmarks b0, b1, ...
// (results b.csv), without holding the file in memory.
func writeHugeJob(t *testing.T, job string, world, benches int, host func(int) string) {
	t.Helper()
	jobdirtest.Mkdir(t, jobdirtest.At(job).Nodes())
	f, err := os.Create(jobdirtest.At(job).JobFile()) // streamed: a host list of millions
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, `{"version":1,"job":"1","world":%d,"nodes":[`, world)
	for r := range world {
		if r > 0 {
			w.WriteByte(',')
		}
		w.WriteString(strconv.Quote(host(r)))
	}
	w.WriteString(`],"manifest":{"name":"t","benchmarks":[`)
	for i := range benches {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `{"name":"b%d","results":"b.csv"}`, i)
	}
	w.WriteString("]}}")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(f.Name()); st.Size() > jobdir.MaxStatusSize {
		t.Fatalf("job.json is %d bytes, over what collect reads", st.Size())
	}
}

// short formats v for a failure message, cut to 2,000 bytes (the code before the fix
// listed two million nodes).
func short(v any) string {
	s := fmt.Sprintf("%+v", v)
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

// heapGuard is heapPeak that also stops the test binary when the heap in use passes limit,
// so that a regression fails the test instead of taking the machine's memory.
func heapGuard(limit uint64) func() uint64 {
	var peak atomic.Uint64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			if m.HeapInuse > limit {
				panic(fmt.Sprintf("heap in use %d MiB, over %d MiB: stopped before it takes the machine's memory", m.HeapInuse>>20, limit>>20))
			}
			select {
			case <-quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(quit); <-done; return peak.Load() }
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func threeNodeJob(t *testing.T, stuck *jobdir.Status) string {
	t.Helper()
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "77", 3)
	csv := "model,performance,metric,status\nm,10,x,SUCCESS\n"
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, csv)
	resultstest.WriteNode(t, job, 2, jobdir.OutcomeSuccess, csv)
	writeStuckNode(t, job, stuck)
	return shared
}

// writeBigCSV writes a results CSV of about size bytes for node rank of job.
func writeBigCSV(t *testing.T, job string, rank int, size int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(resultstest.NodeOf(job, rank).Results("b"), "b.csv"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("model,performance,metric,batch\n")
	var n int64
	for i := 0; n < size; i++ {
		k, _ := fmt.Fprintf(w, "m%d,%d.5,samples_per_second,%d\n", i, 1000+i%97, i%64)
		n += int64(k)
	}
	w.Flush()
	f.Close()
}

// heapPeak samples HeapInuse until stop is called, which returns the peak.
func heapPeak() func() uint64 { return heapGuard(math.MaxUint64) }

// hostileJob is a one-node job folder whose CSV is hostileCSV.
func hostileJob(t *testing.T) (shared, job string) {
	t.Helper()
	shared = t.TempDir()
	job = resultstest.WriteJob(t, shared, "66", 1)
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, hostileCSV)
	return shared, job
}

// formulaLike: a cell a spreadsheet would evaluate, by OWASP's rule, that is not a number.
func formulaLike(c string) bool {
	if c == "" || !strings.ContainsRune("=+-@\t\r", rune(c[0])) {
		return false
	}
	for _, n := range []string{"-1.5", "+3e2", "-0", "-inf", "-1", "-1.00"} {
		if c == n {
			return false
		}
	}
	return true
}

// unsafeOnScreen returns the first rune of out that a terminal would act on rather than
// show: a C0 control other than the newline (a tab too: a table cell is one line), DEL, a
// C1 control, a line or paragraph separator, a bidi control, or a byte that is not UTF-8.
func unsafeOnScreen(out string) (rune, bool) {
	for i, r := range out {
		switch {
		case r == '\n':
		case r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"),
			r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return r, true
		}
	}
	return 0, false
}

// markdownCells counts the cells of a markdown table line: the '|' not escaped by a '\'.
func markdownCells(line string) int {
	n, esc := 0, false
	for _, r := range line {
		switch {
		case esc:
			esc = false
		case r == '\\':
			esc = true
		case r == '|':
			n++
		}
	}
	return n - 1
}

// perfRows reads perf.csv's rows as maps by column.
func perfRows(t *testing.T, s *results.Summary) []map[string]string {
	t.Helper()
	data, err := results.EncodeCSV(results.PerfTable(s))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// writeStuckNode writes node 1 of a job folder from resultstest.WriteJob: its status still says running,
// with benchmark b under way since t0+3m (its latest record), as a SIGKILLed run leaves it.
func writeStuckNode(t *testing.T, job string, st *jobdir.Status) {
	t.Helper()
	if st == nil {
		ok, run := t0.Add(time.Minute), t0.Add(2*time.Minute)
		st = &jobdir.Status{Version: 1, Rank: 1, Host: "h1", World: 3, Outcome: jobdir.OutcomeRunning, StartedAt: t0,
			Phases: []jobdir.PhaseStatus{
				{Name: jobdir.PhaseContext, StartedAt: t0, FinishedAt: &ok, Outcome: jobdir.PhaseOK},
				{Name: jobdir.PhaseImage, StartedAt: ok, FinishedAt: &run, Outcome: jobdir.PhaseOK},
				{Name: jobdir.PhaseRun, StartedAt: run, Outcome: jobdir.OutcomeRunning}},
			Benchmarks: []jobdir.BenchmarkStatus{{Name: "b", Outcome: jobdir.OutcomeRunning, StartedAt: t0.Add(3 * time.Minute)}}}
	}
	jobdirtest.Status(t, resultstest.NodeOf(job, 1), st)
}

// hostileCSV is a results CSV a hostile container could write: spreadsheet formulas in
// cells and in a column name, numbers that look like formulas but are not, and terminal
// escapes (an OSC 8 hyperlink, a colour, a CSI as a C1 rune, a bidi override) in cells.
const hostileCSV = "model,performance,metric,\"=HYPERLINK(\"\"http://evil\"\")\",note\n" +
	"\"=cmd|' /C calc'!A0\",-1.5,@SUM(1),a,\"\x1b]8;;http://evil\x07click\x1b]8;;\x07\"\n" +
	"+3e2,+3e2,-0,b,\"\x1b[31mred\tcell\r\"\n" +
	"-inf,1e-5,-1,c,\"x\u009b2Jy \u202eevil\u2066 |pipe| `tick`\"\n" +
	"tab,7,\"\rCR\",\"-1,234\",\"\tTAB\"\n"

// escapeCSV adds rows whose shown columns (model, metric) carry terminal escapes.
const escapeCSV = hostileCSV + "\"\x1b[2J\x1b]0;pwned\x07m\u202eodel\",5,\"u\u009b31m\u2028x|y`z\\\",d,e\n"

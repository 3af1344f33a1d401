package results

import (
	"bufio"
	"context"
	"errors"
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

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// writeBigCSV writes a results CSV of about size bytes for node rank of job.
func writeBigCSV(t *testing.T, job string, rank int, size int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(nodeOf(job, rank).Results("b"), "b.csv"))
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

// A cancelled collect stops parsing a big CSV at once (it read every CSV to the end): of a
// 32 MiB CSV it reads the first MiB (tried whole, as a small CSV is) and a buffer, no
// more. What is measured is the bytes the process read (/proc/self/io), not the time.
func TestCancelStopsReadingABigCSV(t *testing.T) {
	dir := t.TempDir()
	jobdirtest.Mkdir(t, nodeOf(dir, 0).Results("b"))
	writeBigCSV(t, dir, 0, 32<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := bytesRead(t)
	_, err := readCSVBeneath(ctx, new(safefile.Reader), nodeOf(dir, 0).Path, filepath.Join(jobdir.ResultsRel("b"), "b.csv"), MaxCSVSize, MaxCSVRows)
	read := bytesRead(t) - before
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	t.Logf("read %d KiB after the cancel", read>>10)
	if read > 4<<20 {
		t.Errorf("read %d KiB of a 32 MiB CSV after the cancel", read>>10)
	}
}

// A collect cancelled while it parses big CSVs returns ctx's error at once: it reads
// little more after the cancel, far from the rest of the 126 MiB. The cancel comes once
// the process has read 8 MiB (it is parsing); bytes read are the process's (/proc/self/io).
func TestCancelStopsAggregate(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 126 MiB")
	}
	job := writeJob(t, t.TempDir(), "1", 2)
	for r := range 2 {
		writeNode(t, job, r, "success", "")
		writeBigCSV(t, job, r, 63<<20)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := bytesRead(t)
	var atCancel atomic.Int64
	go func() {
		for ctx.Err() == nil {
			if n, err := rchar(); err == nil && n-start >= 8<<20 {
				atCancel.Store(n - start)
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := Aggregate(ctx, jobdir.Dir{Path: job, JobID: "1"}, AggregateOptions{})
	read := bytesRead(t) - start
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	after := read - atCancel.Load()
	t.Logf("read %d MiB before the cancel, %d KiB after", atCancel.Load()>>20, after>>10)
	if after > 16<<20 {
		t.Errorf("read %d MiB more after the cancel", after>>20)
	}
}

// bytesRead is what this process has read so far (rchar of /proc/self/io: every read,
// from the page cache or not); the test is skipped where there is none to read.
func bytesRead(t *testing.T) int64 {
	n, err := rchar()
	if err != nil {
		t.Skipf("cannot count the bytes read: %v", err)
	}
	return n
}

// rchar is rchar of /proc/self/io.
func rchar() (int64, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/self/io has no rchar:\n%s", b)
}

// A 6,000,000-character field, a header line of 10 MB (a million columns) or one of 2 MB
// with a repeated name is a clear problem with the file, not a crash and not a table that
// costs many times the file's size.
func TestHugeFieldsAndHeaders(t *testing.T) {
	dir := t.TempDir()
	node := nodeOf(dir, 0)
	nd := node.Path
	jobdirtest.Mkdir(t, node.Results("b"))
	p := filepath.Join(node.Results("b"), "b.csv")
	read := func() (*Table, error) {
		return readCSVBeneath(context.Background(), new(safefile.Reader), nd, filepath.Join(jobdir.ResultsRel("b"), "b.csv"), MaxCSVSize, MaxCSVRows)
	}
	os.WriteFile(p, []byte("model,performance,note\nb,1,\""+strings.Repeat("x", 6_000_000)+"\"\n"), 0o644)
	if _, err := read(); err == nil || !strings.Contains(err.Error(), "b.csv:2: a field of 6000000 bytes; collect reads fields of at most 65536") {
		t.Fatalf("a 6 MB field: %v", err)
	}
	var hdr strings.Builder
	for i := range 1_000_000 {
		fmt.Fprintf(&hdr, "c%d,", i)
	}
	os.WriteFile(p, []byte(hdr.String()+"performance\n"), 0o644)
	if _, err := read(); err == nil || !strings.Contains(err.Error(), "b.csv:1: 1000001 columns; collect reads at most 1024") {
		t.Fatalf("a 10 MB header: %v", err)
	}
	os.WriteFile(p, []byte(strings.Repeat("h,", 1_000_000)+"performance\n1\n"), 0o644)
	if _, err := read(); err == nil || !strings.Contains(err.Error(), "columns; collect reads at most") {
		t.Fatalf("a 2 MB header: %v", err)
	}
	// Small files are read whole and checked at once; big ones are checked row by row.
	pad := strings.Repeat("a,1\n", smallCSV/4+1)
	for _, c := range []struct{ data, want string }{
		{"model,performance\nb,1\nc,\x00\n", "b.csv: binary data (a NUL byte at offset 24), not CSV text"},
		{"model,performance\n" + pad + "c,\x00\n", fmt.Sprintf("b.csv:%d: binary data (a NUL byte), not CSV text", smallCSV/4+3)},
		{"\xef\xbb\xbfmodel,performance\nb,\xff\n", "b.csv: not UTF-8 text"},
		{"\xef\xbb\xbfmodel,performance\n" + pad + "b,\xff\n", fmt.Sprintf("b.csv:%d: not UTF-8 text", smallCSV/4+3)},
	} {
		os.WriteFile(p, []byte(c.data), 0o644)
		if _, err := readCSVBeneath(context.Background(), new(safefile.Reader), nd, filepath.Join(jobdir.ResultsRel("b"), "b.csv"), MaxCSVSize, MaxCSVRows); err == nil ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("%d bytes: %v, want %q", len(c.data), err, c.want)
		}
	}
	f, _ := os.Create(p)
	f.Truncate(MaxCSVSize + 10)
	f.Close()
	if _, err := readCSVBeneath(context.Background(), new(safefile.Reader), nd, filepath.Join(jobdir.ResultsRel("b"), "b.csv"), MaxCSVSize, MaxCSVRows); err == nil ||
		!strings.Contains(err.Error(), "larger than the 64 MiB limit") {
		t.Fatalf("over the cap: %v", err)
	}
}

// Rows of a few kilobytes each: 10,000 of them are 60 MB, and every worker held such a
// table at once. Now a node's CSV keeps at most maxKeptBytes of rows.
func TestWideRowsAreBoundedInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 360 MiB")
	}
	job := writeJob(t, t.TempDir(), "1", 6)
	field := strings.Repeat("y", 1000)
	for r := range 6 {
		writeNode(t, job, r, "success", "")
		f, err := os.Create(filepath.Join(nodeOf(job, r).Results("b"), "b.csv"))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString("model,performance,a,b,c,d,e,f\n")
		for i := range MaxCSVRows {
			fmt.Fprintf(w, "m%d,%d,%s,%s,%s,%s,%s,%s\n", i, i, field, field, field, field, field, field)
		}
		w.Flush()
		f.Close()
	}
	runtime.GC()
	stop := heapPeak()
	s := aggregate(t, job)
	p := stop()
	t.Logf("peak heap in use %d MiB", p>>20)
	if p > 256<<20 {
		t.Errorf("peak heap %d MiB, over 256 MiB", p>>20)
	}
	if n := len(s.Benchmarks[0].Rows); n == 0 || n >= MaxCSVRows {
		t.Errorf("%d rows kept", n)
	}
	if c := s.Benchmarks[0].Candidates[0]; !strings.Contains(c.Problem, "NOTE: nodes/0-h0/results/b/b.csv has 10000 rows; only the first") {
		t.Errorf("no NOTE: %q", c.Problem)
	}
}

// heapPeak samples HeapInuse until stop is called, which returns the peak.
func heapPeak() func() uint64 { return heapGuard(math.MaxUint64) }

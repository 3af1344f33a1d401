package runner

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// A container that prints gigabytes without a newline, or a few enormous lines, must not
// make the node keep them in memory for the diagnostics' log tail.
func TestLineTailIsBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tail := &lineTail{n: 200}
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 512 { // 512 MiB, no newline
		tail.Write(chunk)
	}
	tail.Write([]byte("\nlast line\n"))
	for range 300 { // 300 lines of 1 MiB each
		tail.Write(chunk)
		tail.Write([]byte("\n"))
	}
	tail.Write([]byte("the end"))
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapInuse) - int64(before.HeapInuse); held > 64<<20 {
		t.Errorf("the tail holds %d MiB after the output", held>>20)
	}
	got := tail.get()
	if len(got) != 200 || got[len(got)-1] != "the end" {
		t.Fatalf("%d lines, last %.40q", len(got), got[len(got)-1])
	}
	for _, l := range got[:len(got)-1] {
		if len(l) > maxTailLine+len(tailCut) || !strings.HasSuffix(l, tailCut) {
			t.Fatalf("a kept line of %d bytes (want at most %d, ending %q)", len(l), maxTailLine, tailCut)
		}
	}
}

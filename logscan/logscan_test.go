package logscan

import (
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestScanner(t *testing.T) {
	for _, c := range []struct {
		name, log string
		line      int
		pattern   string
	}{
		{"clean", "step 1\nperformance: 12.5 samples_per_second\n", 0, ""},
		{"traceback at exit 0", "step 1\nTraceback (most recent call last):\n  File \"x.py\"\nRuntimeError: boom\n", 2, "Traceback (most recent call last)"},
		{"oom", "ok\r\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate\r\n", 2, "OutOfMemoryError"},
		{"benign line with FAILED", "tests: 12 passed, 0 FAILED\n", 0, ""},
		{"metrics agent noise", "RpcError: Running out of retries to initialize the metrics agent\n", 0, ""},
		{"last line without newline", "a\nb\nRuntimeError: x", 3, "RuntimeError:"},
		{"pattern split over writes", "", 1, "CUDA out of memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(Defaults())
			if c.name == "pattern split over writes" {
				io.WriteString(s, "CUDA out of")
				io.WriteString(s, " memory\n")
			} else {
				for _, part := range strings.SplitAfter(c.log, "o") { // odd cuts
					io.WriteString(s, part)
				}
			}
			m := s.Match()
			switch {
			case c.line == 0 && m != nil:
				t.Fatalf("matched: %v", m)
			case c.line > 0 && (m == nil || m.Line != c.line || m.Pattern != c.pattern):
				t.Fatalf("match %v, want line %d pattern %q", m, c.line, c.pattern)
			}
		})
	}
	if m := New(Rules{}).Match(); m != nil {
		t.Fatal("no patterns, yet a match")
	}
	s := New(Rules{Errors: []string{"NCCL WARN"}})
	io.WriteString(s, "RuntimeError: not mine\nNCCL WARN timeout\n")
	if m := s.Match(); m == nil || m.Line != 2 {
		t.Fatalf("custom rules: %v", m)
	}
}

// A line longer than MaxLine is scanned up to MaxLine and its quote cut to 500 bytes; a
// pattern beyond the cut is not seen (the cost of bounded memory).
func TestLongLines(t *testing.T) {
	s := New(Defaults())
	io.WriteString(s, strings.Repeat("x", 6000)+" RuntimeError: late in a long line\n")
	m := s.Match()
	if m == nil || len(m.Text) > 500 {
		t.Fatalf("%v", m)
	}
	s = New(Defaults())
	io.WriteString(s, strings.Repeat("y", MaxLine+10)+"RuntimeError: past the cut\nnext\n")
	if m := s.Match(); m != nil {
		t.Fatalf("a pattern past %d bytes of a line matched: %v", MaxLine, m)
	}
}

// A 1 GiB log streams through the scanner with flat memory.
func TestOneGiBLogFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("scans 1 GiB")
	}
	s := New(Defaults())
	block := []byte(strings.Repeat("step 123 loss 0.25 lr 1e-4 throughput 1234.5 samples/s\n", 1<<10)) // ~56 KiB
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak, lines := uint64(0), 0
	for written := 0; written < 1<<30; written += len(block) {
		s.Write(block)
		lines += 1 << 10
		if written%(64<<20) == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}
	s.Write([]byte("Traceback (most recent call last):\n"))
	if m := s.Match(); m == nil || m.Line != lines+1 {
		t.Fatalf("match %v", m)
	}
	if grew := int64(peak) - int64(before.HeapInuse); grew > 8<<20 {
		t.Errorf("heap grew by %d MiB scanning 1 GiB", grew>>20)
	}
}

// A matching line's terminal escapes (a title-setting OSC, a colour, a CSI as a C1 rune, a
// bidi override) went raw into the reason that status.json, collect and jobs print: the
// reason now shows them escaped, and the match keeps the line as it was.
func TestMatchReasonEscapesControls(t *testing.T) {
	s := New(Defaults())
	line := "\x1b]0;pwned\x07\x1b[31mRuntimeError: x\u009b2J \u202eevil\x7f"
	io.WriteString(s, "ok\n"+line+"\r\n")
	m := s.Match()
	if m == nil {
		t.Fatal("no match")
	}
	want := `line 2 contains the error pattern "RuntimeError:": \x1b]0;pwned\x07\x1b[31mRuntimeError: x\u009b2J \u202eevil\x7f`
	if got := m.String(); got != want {
		t.Errorf("String() = %q\nwant       %q", got, want)
	}
	if m.Text != line {
		t.Errorf("Text = %q, want the line as written", m.Text)
	}
}

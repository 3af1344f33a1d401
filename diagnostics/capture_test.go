package diagnostics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

func TestDecodeAddr(t *testing.T) {
	for in, want := range map[string]string{"0100007F:1F90": "127.0.0.1:8080", "00000000:0016": "0.0.0.0:22", "bad": "bad"} {
		if got := decodeAddr(in); got != want {
			t.Errorf("decodeAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestListeningReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := listening(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := listening(0); err == nil {
		t.Error("pid 0 accepted")
	}
}

func TestReportIsBoundedAndWritten(t *testing.T) {
	var lines []string
	for i := 0; i < 500; i++ {
		lines = append(lines, strings.Repeat("x", 5000))
	}
	r := Report{Reason: "exit code 3", Container: "c", ExitCode: 3, LogTail: bound(lines), NotCaptured: []string{"processes: exited"}}
	if len(r.LogTail) != MaxLogLines || len(r.LogTail[0]) > MaxLineBytes+4 {
		t.Fatalf("not bounded: %d lines, %d bytes", len(r.LogTail), len(r.LogTail[0]))
	}
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, jobdir.DiagSummaryFile))
	if !strings.Contains(string(sum), "exit code:  3") || !strings.Contains(string(sum), "not captured: processes") {
		t.Fatalf("summary:\n%.300s", sum)
	}
	if st, _ := os.Stat(filepath.Join(dir, jobdir.DiagReportFile)); st.Size() > 1<<20 {
		t.Fatalf("report is %d bytes", st.Size())
	}
}

package diagnostics

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	if _, err := listening(os.Getpid(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := listening(0, nil); err == nil {
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

// TestHelperListener is a workload's process that listens: it prints its port and waits.
func TestHelperListener(t *testing.T) {
	if os.Getenv("DIAG_HELPER_LISTEN") != "1" {
		t.Skip("a helper process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(2)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	os.Stdin.Read(make([]byte, 1)) // until the test closes it
	os.Exit(0)
}

// A workload that shares benchctl's network (a process, or a container on the host's
// network) is said to listen on its own sockets only, not on every socket of the node: the
// test's own listener (the node's sshd, as it were) is not in the report, the workload's is;
// a process table whose pids are not the workload's descendants adds nothing, and a table
// without a PID column is said to be unusable rather than read.
func TestListeningOnTheNodesNetworkIsTheWorkloadsOwn(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("no /proc")
	}
	node, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	nodePort := node.Addr().(*net.TCPAddr).Port
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperListener$")
	cmd.Env = append(os.Environ(), "DIAG_HELPER_LISTEN=1")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	port := strings.TrimSpace(line)
	pid := cmd.Process.Pid
	has := func(socks []Socket, port string) bool {
		for _, s := range socks {
			if strings.HasSuffix(s.Local, ":"+port) {
				return true
			}
		}
		return false
	}
	r := Report{ProcessTitles: []string{"PID", "PPID", "CMD"}, Processes: [][]string{{strconv.Itoa(pid), "1", "helper"}, {"1", "0", "init"}, {"x", "y", "garbage"}, {strconv.Itoa(os.Getpid()), "1", "the node's listener"}}}
	socks, err := r.listening(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !has(socks, port) || has(socks, strconv.Itoa(nodePort)) {
		t.Errorf("sockets %v: want the workload's port %s and not the node's %d", socks, port, nodePort)
	}
	if all, _ := listening(pid, nil); !has(all, strconv.Itoa(nodePort)) {
		t.Errorf("the namespace's sockets %v lack the node's %d: the test proves nothing", all, nodePort)
	}
	r.ProcessTitles = []string{"USER", "CMD"}
	if _, err := r.listening(pid); err == nil || !strings.Contains(err.Error(), "no PID column") {
		t.Errorf("a table without a PID column: %v", err)
	}
}

// A report taken while the workload ran says so, not "exit code 0".
func TestSummaryOfARunningWorkload(t *testing.T) {
	sum := Report{Reason: "timed out", Container: "c", Running: true}.Summary()
	if strings.Contains(sum, "exit code") || !strings.Contains(sum, "running when captured") {
		t.Errorf("summary:\n%s", sum)
	}
}

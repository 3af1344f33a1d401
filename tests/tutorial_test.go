package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/tests/testbed"
)

// The paths docs/tutorial.md shows for the reader's folder and shared directory: the test
// runs in a fresh folder and shared directory and writes these in their place.
const (
	tutorialHome   = "/home/you/bench"
	tutorialShared = "/shared/benchctl"
)

// tutorialStep is one `$ command` of a ```console block and the output shown after it.
type tutorialStep struct {
	line int
	cmd  string
	want []string
}

// tutorialSteps reads the commands and shown outputs of a markdown file's console blocks.
func tutorialSteps(t *testing.T, markdown string) []tutorialStep {
	t.Helper()
	var steps []tutorialStep
	in := false
	sc := bufio.NewScanner(strings.NewReader(markdown))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case !in && l == "```console":
			in = true
		case in && l == "```":
			in = false
		case in && strings.HasPrefix(l, "$ "):
			steps = append(steps, tutorialStep{line: n, cmd: strings.TrimPrefix(l, "$ ")})
		case in && len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		case in:
			t.Fatalf("docs/tutorial.md:%d: a console block starts with output, not a $ command", n)
		}
	}
	return steps
}

// The tutorial, followed start to end on the testbed in a fresh folder: each command of its
// console blocks is run as shown, on a terminal (a pseudo-terminal: what a reader sees), and
// every line the tutorial shows after it must be on that terminal, in that order (numbers,
// ids and hashes may differ; the reader's folder and shared directory are the test's).
func TestTutorial(t *testing.T) {
	tb := testbed.Require(t)
	doc, err := os.ReadFile(repoPath(t, "docs/tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := tutorialSteps(t, string(doc))
	if len(steps) < 6 {
		t.Fatalf("docs/tutorial.md has %d console commands; the walk-through has more", len(steps))
	}
	home, shared := t.TempDir(), tb.FreshDir(t)
	bin := t.TempDir()
	if err := os.Symlink(tb.Benchctl(t), filepath.Join(bin, "benchctl")); err != nil {
		t.Fatal(err)
	}
	env := append(tb.Env(), "PATH="+bin+":"+os.Getenv("PATH"), "BENCHCTL_SHARED_DIR="+shared, "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]],
		"NO_COLOR=1", "TERM=xterm", "CGO_ENABLED=0", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
	for _, s := range steps {
		words := strings.Fields(s.cmd)
		if strings.ContainsAny(s.cmd, `"'\$|&;<>`+"`") {
			t.Fatalf("docs/tutorial.md:%d: %q: the test runs commands without a shell; keep them to plain words", s.line, s.cmd)
		}
		var vars []string
		for len(words) > 0 && strings.Contains(words[0], "=") {
			vars, words = append(vars, words[0]), words[1:]
		}
		if len(words) == 0 || (words[0] != "benchctl" && words[0] != "go") {
			t.Fatalf("docs/tutorial.md:%d: %q: only benchctl and go commands are run", s.line, s.cmd)
		}
		prog := words[0]
		if prog == "benchctl" {
			prog = filepath.Join(bin, "benchctl") // exec looks words up in this process's PATH
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a stuck submit --wait fails the step, not the whole go test
		defer cancel()
		cmd := exec.CommandContext(ctx, prog, words[1:]...)
		cmd.Dir, cmd.Env = home, append(append([]string(nil), env...), vars...)
		out, code := onTerminal(t, cmd)
		out = strings.ReplaceAll(strings.ReplaceAll(out, home, tutorialHome), shared, tutorialShared)
		t.Logf("$ %s\n%s", s.cmd, out)
		if code != 0 {
			t.Fatalf("docs/tutorial.md:%d: $ %s: exit %d\n%s", s.line, s.cmd, code, out)
		}
		if missing := shownLinesMissing(s.want, strings.Split(out, "\n")); missing != "" {
			t.Errorf("docs/tutorial.md:%d: $ %s: the tutorial shows\n  %s\nwhich the terminal did not (in that order); it showed:\n%s", s.line, s.cmd, missing, out)
		}
	}
}

// shownLinesMissing is the first shown line that the terminal's lines lack, in order, or "".
// A shown line matches a terminal line that differs only in numbers, hex ids and the width
// of the spaces between columns.
func shownLinesMissing(shown, got []string) string {
	i := 0
	for _, w := range shown {
		if strings.TrimSpace(w) == "" {
			continue
		}
		re := shownLine(w)
		for i < len(got) && !re.MatchString(got[i]) {
			i++
		}
		if i == len(got) {
			return w
		}
		i++
	}
	return ""
}

var (
	variablePart = regexp.MustCompile(`[0-9a-f]{6,}|\d+(\\\.\d+)?|( )+`)
)

// shownLine is the pattern a shown line stands for.
func shownLine(w string) *regexp.Regexp {
	q := regexp.QuoteMeta(strings.TrimRight(w, " "))
	q = variablePart.ReplaceAllStringFunc(q, func(s string) string {
		switch {
		case strings.Trim(s, " ") == "":
			return " +"
		case strings.Trim(s, "0123456789") == "" || strings.Contains(s, `\.`):
			return `[0-9][0-9.]*`
		default:
			return `[0-9a-f]+`
		}
	})
	return regexp.MustCompile("^" + q + " *$")
}

// onTerminal runs cmd with stdout and stderr a pseudo-terminal and returns what a terminal
// would show: each line as it stands after carriage returns and erase-line codes redrew it.
func onTerminal(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	defer ptm.Close()
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pts, pts
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&buf, ptm); close(done) }() // ends with EIO when no one holds the terminal
	err = cmd.Start()
	pts.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal stayed open 30 s after the command ended")
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(buf.String(), "\r\n", "\n"), "\n") {
		if i := strings.LastIndex(l, "\r"); i >= 0 {
			l = l[i+1:]
		}
		lines = append(lines, strings.ReplaceAll(l, "\033[K", ""))
	}
	return strings.Join(lines, "\n"), code
}

// A shown line stands for the lines that differ from it only in numbers, hex ids and column
// spacing — and not for others.
func TestShownLine(t *testing.T) {
	for _, tc := range []struct {
		shown, got string
		match      bool
	}{
		{"INFO  built and published key=318903042d75 seconds=2.1", "INFO  built and published key=cc2635366bcd seconds=10.25", true},
		{"464  allreduce  done   3      2026-11-26 10:49  4.6s      yes        3/3 succeeded", "1017  allreduce  done   3      2026-12-01 09:05  12.6s     yes        3/3 succeeded", true},
		{"cache hit: no (built)", "cache hit: yes", false},
		{"INFO  job finished job=464 state=COMPLETED", "time=2026-11-26T10:48:19.927Z level=INFO msg=\"job finished\" job=464 state=COMPLETED", false},
		{"2-n3  success  results", "2-n3  failure  results", false},
		{"allreduce  allreduce_busbw  GB/s    -    1.072", "allreduce  allreduce_busbw  GB/s    size_bytes=67108864  0.428", false},
	} {
		if got := shownLine(tc.shown).MatchString(tc.got); got != tc.match {
			t.Errorf("%q ~ %q: %v, want %v", tc.shown, tc.got, got, tc.match)
		}
	}
	if m := shownLinesMissing([]string{"b", "a"}, []string{"a", "b"}); m != "a" {
		t.Errorf("out of order: %q", m)
	}
}

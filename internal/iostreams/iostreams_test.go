package iostreams

import (
	"bytes"
	"os"
	"testing"
)

// /dev/null is a character device but not a terminal: `benchctl build 2>/dev/null` must
// not draw a bar into it. Nor is a pipe or a buffer a terminal.
func TestStreamsThatAreNotTerminals(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, s := range map[string]Streams{
		"/dev/null": {in: null, out: null, err: null},
		"a pipe":    {in: r, out: w, err: w},
		"a buffer":  {out: &bytes.Buffer{}, err: &bytes.Buffer{}},
	} {
		if s.IsStdoutTTY() || s.IsStderrTTY() || s.CanRedrawStderr() || s.ColorEnabled() || IsTerminal(s.err) {
			t.Errorf("%s counts as a terminal", name)
		}
	}
}

// Tests fix the answer, as cli/cli's SetStdoutTTY: the fixed stream still writes through,
// and isTerminal (which the commands ask of their stderr for progress) sees the answer.
func TestStreamsTTYOverride(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("NO_COLOR", "")
	var out, errb bytes.Buffer
	s := Streams{out: &out, err: &errb}
	s.SetStdoutTTY(true)
	s.SetStderrTTY(true)
	if !s.IsStdoutTTY() || !s.IsStderrTTY() || !s.CanRedrawStderr() || !IsTerminal(s.err) || !s.ColorEnabled() {
		t.Fatalf("overridden to a terminal: stdout %v stderr %v", s.IsStdoutTTY(), s.IsStderrTTY())
	}
	s.Out().Write([]byte("result\n"))
	s.ErrOut().Write([]byte("log\n"))
	if out.String() != "result\n" || errb.String() != "log\n" {
		t.Fatalf("the overridden Streams do not write through: %q %q", out.String(), errb.String())
	}
	s.SetStderrTTY(false) // a second override replaces the first, it does not wrap it
	if s.IsStderrTTY() || IsTerminal(s.err) || s.err.(ttyWriter).Writer != &errb {
		t.Fatalf("overridden back: stderr %v", s.IsStderrTTY())
	}

	// TERM=dumb: a terminal that cannot redraw: progress is log lines, nothing is coloured.
	t.Setenv("TERM", "dumb")
	s.SetStderrTTY(true)
	if !s.IsStderrTTY() || s.CanRedrawStderr() || IsTerminal(s.err) || s.ColorEnabled() {
		t.Errorf("TERM=dumb: tty %v, redraw %v, colour %v", s.IsStderrTTY(), s.CanRedrawStderr(), s.ColorEnabled())
	}
	// NO_COLOR, any non-empty value: no colour, but the bar is not colour and stays.
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "0")
	if s.ColorEnabled() || !s.CanRedrawStderr() {
		t.Errorf("NO_COLOR=0: colour %v, redraw %v", s.ColorEnabled(), s.CanRedrawStderr())
	}
}

package iostreams

import (
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Streams are the IO streams, decided in one place (cli/cli's iostreams): stdout for
// results, stderr for logs and progress. Whether a stream is a terminal is asked of the
// stream itself: a *os.File is asked with term.IsTerminal (so /dev/null, a character device
// that is not a terminal, is not one), anything else is not a terminal, and a test fixes the
// answer with SetStdoutTTY or SetStderrTTY, so New(in, out, err) needs nothing more. TERM
// and NO_COLOR are read where they matter: IsTerminal, ColorEnabled.
type Streams struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// System are the process's own stdin, stdout and stderr.
func System() Streams {
	return Streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}
}

// New are streams over in, out and err (a test's buffers); a nil in reads nothing.
func New(in io.Reader, out, err io.Writer) Streams {
	if in == nil {
		in = strings.NewReader("")
	}
	return Streams{in: in, out: out, err: err}
}

func (s Streams) In() io.Reader     { return s.in }
func (s Streams) Out() io.Writer    { return s.out }
func (s Streams) ErrOut() io.Writer { return s.err }

// IsStdoutTTY reports whether stdout is a terminal.
func (s Streams) IsStdoutTTY() bool { return isTTY(s.out) }

// IsStderrTTY reports whether stderr is a terminal.
func (s Streams) IsStderrTTY() bool { return isTTY(s.err) }

// SetStdoutTTY fixes IsStdoutTTY's answer, for tests of the terminal and the pipe output.
func (s *Streams) SetStdoutTTY(tty bool) { s.out = ttyWriter{Writer: unwrapTTY(s.out), tty: tty} }

// SetStderrTTY fixes IsStderrTTY's answer (and so whether progress is a redrawn bar).
func (s *Streams) SetStderrTTY(tty bool) { s.err = ttyWriter{Writer: unwrapTTY(s.err), tty: tty} }

// CanRedrawStderr reports whether progress on stderr may be a bar redrawn in place: stderr
// is a terminal and TERM is not "dumb" (a terminal that cannot move the cursor).
func (s Streams) CanRedrawStderr() bool { return IsTerminal(s.err) }

// ColorEnabled reports whether stdout may be coloured: a terminal, TERM not "dumb", and
// NO_COLOR unset or empty (https://no-color.org). The tables' statuses are coloured (see
// colouredTable; the bar's "\r\033[K" only erases the line, which NO_COLOR leaves alone);
// anything that colours output must ask this first.
func (s Streams) ColorEnabled() bool {
	return IsTerminal(s.out) && os.Getenv("NO_COLOR") == ""
}

// isTerminal reports whether w may be redrawn in place: it is a terminal (see Streams) and
// TERM is not "dumb". The progress printer asks it of the stderr stream.
func IsTerminal(w io.Writer) bool {
	return isTTY(w) && os.Getenv("TERM") != "dumb"
}

// isTTY reports whether w is a terminal: a test's fixed answer, else term.IsTerminal of a
// file's descriptor.
func isTTY(w io.Writer) bool {
	switch w := w.(type) {
	case ttyWriter:
		return w.tty
	case *os.File:
		return w != nil && term.IsTerminal(int(w.Fd()))
	}
	return false
}

// ttyWriter is a stream whose TTY answer a test fixed; it writes through to the stream.
type ttyWriter struct {
	io.Writer
	tty bool
}

func unwrapTTY(w io.Writer) io.Writer {
	if t, ok := w.(ttyWriter); ok {
		return t.Writer
	}
	return w
}

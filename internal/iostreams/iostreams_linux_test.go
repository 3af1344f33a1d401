package iostreams

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A real terminal (the other end of a pseudo-terminal) is one.
func TestStreamsPseudoTerminalIsATerminal(t *testing.T) {
	t.Setenv("TERM", "xterm")
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("TIOCGPTN: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("TIOCSPTLCK: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the terminal end: %v", err)
	}
	defer pts.Close()
	s := Streams{in: pts, out: pts, err: pts}
	if !s.IsStdoutTTY() || !s.IsStderrTTY() || !s.CanRedrawStderr() {
		t.Errorf("a pseudo-terminal is not a terminal: stdout %v stderr %v", s.IsStdoutTTY(), s.IsStderrTTY())
	}
}

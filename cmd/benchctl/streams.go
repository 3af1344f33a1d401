package main

import (
	"io"
	"os"
)

// streams are the IO streams, decided in one place: stdout for results, stderr for logs.
type streams struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

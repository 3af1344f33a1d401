package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/benchctl/benchctl/internal/exitcode"
)

// Exit codes, the same as madengine's (see internal/exitcode).
const (
	exitOK      = exitcode.OK
	exitFailure = exitcode.Failure
	exitBuild   = exitcode.Build
	exitRun     = exitcode.Run
	exitInvalid = exitcode.Invalid
)

// usageError is bad command-line input: exit 4, with a hint.
type usageError struct {
	msg  string
	hint string
}

func (e *usageError) Error() string      { return e.msg }
func (e *usageError) InvalidInput() bool { return true }

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// exitCode maps an error to the process exit code (internal/exitcode is the one mapping).
func exitCode(err error) int { return exitcode.Of(err) }

// printError writes an error for a person: the message, then a hint if there is one.
func printError(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "invalid ") {
		msg = "error: " + msg
	}
	fmt.Fprintln(w, "benchctl: "+msg)
	var ue *usageError
	if errors.As(err, &ue) && ue.hint != "" {
		fmt.Fprintln(w, "hint: "+ue.hint)
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes, the same as madengine's.
const (
	exitOK      = 0
	exitFailure = 1
	exitBuild   = 2
	exitRun     = 3
	exitInvalid = 4
)

// usageError is bad command-line input: exit 4, with a hint.
type usageError struct {
	msg  string
	hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// exitCode maps an error to the process exit code. This is the only place that does.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	var invalid interface{ InvalidInput() bool }
	if errors.As(err, &invalid) && invalid.InvalidInput() {
		return exitInvalid
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitInvalid
	}
	return exitFailure
}

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

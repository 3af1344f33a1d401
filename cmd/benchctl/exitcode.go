package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/textsafe"
)

// Exit codes, the same as madengine's (see internal/exitcode).
const (
	exitOK      = exitcode.OK
	exitFailure = exitcode.Failure
	exitBuild   = exitcode.Build
	exitRun     = exitcode.Run
	exitInvalid = exitcode.Invalid
)

// usagef is bad command-line input: exit 4, with a hint (exitcode.Usagef).
var usagef = exitcode.Usagef

// exitCode maps an error to the process exit code (internal/exitcode is the one mapping).
func exitCode(err error) int { return exitcode.Of(err) }

// hintOf is what the user can do about err: the Hint() of the first error in its chain that
// has one, or "".
func hintOf(err error) string {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}

// printError writes an error for a person: the message, then a hint if there is one.
func printError(w io.Writer, err error) {
	// An error can quote what a container, a node or a co-writer of the shared directory
	// wrote (a status's error, a log line, a folder's name): it reaches the terminal with
	// its control characters escaped (textsafe.Text keeps newlines and tabs).
	// One prefix for every error, "invalid manifest" and "invalid --output" included, so
	// that a person and a script find it the same way.
	fmt.Fprintln(w, "benchctl: error: "+textsafe.Text(err.Error()))
	if hint := hintOf(err); hint != "" {
		fmt.Fprintln(w, "hint: "+textsafe.Text(hint))
	}
}

// printErrorJSON writes the error as one record in the shape of --log-format json's log
// lines (slog's JSON handler: time, level, msg), with the hint if there is one and the exit
// code, so that a JSON log stays JSON to its last line.
func printErrorJSON(w io.Writer, err error, code int, now time.Time) {
	r := slog.NewRecord(now, slog.LevelError, err.Error(), 0)
	if hint := hintOf(err); hint != "" {
		r.AddAttrs(slog.String("hint", hint))
	}
	r.AddAttrs(slog.Int("exitCode", code))
	_ = slog.NewJSONHandler(w, nil).Handle(context.Background(), r) // nowhere to report a failed write of the last error
}

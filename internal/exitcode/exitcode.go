// Package exitcode is the one mapping from an error to benchctl's process exit code, the
// same codes as madengine's: 0 success, 1 failure, 2 build failure, 3 run failure, 4
// invalid input. The command line and the runner's status.json both use it.
package exitcode

import "errors"

// The exit codes.
const (
	OK      = 0
	Failure = 1
	Build   = 2
	Run     = 3
	Invalid = 4
)

// Of maps err to an exit code: 0 for nil; an error that carries its own code
// (ExitCode() int) gives it; an error that says it is bad input (InvalidInput() bool) is
// 4; anything else is 1. The first error in the chain that answers decides.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	var invalid interface{ InvalidInput() bool }
	if errors.As(err, &invalid) && invalid.InvalidInput() {
		return Invalid
	}
	return Failure
}

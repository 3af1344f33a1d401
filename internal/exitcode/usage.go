package exitcode

import "fmt"

// UsageError is bad command-line input: exit 4 (Invalid), with a hint saying what to do.
type UsageError struct {
	Msg     string
	HintMsg string
}

func (e *UsageError) Error() string      { return e.Msg }
func (e *UsageError) InvalidInput() bool { return true }
func (e *UsageError) Hint() string       { return e.HintMsg }

// Usagef is a UsageError with a hint and a formatted message.
func Usagef(hint, format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...), HintMsg: hint}
}

package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

type coded int

func (c coded) Error() string { return "coded" }
func (c coded) ExitCode() int { return int(c) }

type invalid bool

func (i invalid) Error() string      { return "invalid" }
func (i invalid) InvalidInput() bool { return bool(i) }

func TestOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, OK},
		{errors.New("x"), Failure},
		{coded(2), Build},
		{fmt.Errorf("wrapped: %w", coded(3)), Run},
		{invalid(true), Invalid},
		{fmt.Errorf("loading m.yaml: %w", invalid(true)), Invalid},
		{invalid(false), Failure},
	} {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

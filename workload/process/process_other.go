//go:build !linux

package process

import (
	"errors"

	"github.com/benchctl/benchctl/workload"
)

// Runtime is not available off Linux.
type Runtime struct{ workload.Runtime }

// New says the process runtime needs Linux.
func New(string) (*Runtime, error) { return nil, errors.New("the process runtime needs Linux") }

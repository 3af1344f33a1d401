//go:build unix && !linux

package safefile

import "errors"

var errNoOpenat2 = errors.New("openat2 is not available")

var forceWalk = true

func openat2Beneath(int, string) (int, error) { return -1, errNoOpenat2 }

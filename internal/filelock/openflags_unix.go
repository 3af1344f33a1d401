//go:build unix

package filelock

import "syscall"

// noFollow opens the lock file without following a link at its name and without blocking
// on a FIFO planted there.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

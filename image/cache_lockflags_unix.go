//go:build unix

package image

import "syscall"

// pruneLockFlags open a build lock file that prune tries to take: never created, never a
// link followed, and a FIFO swapped in since it was looked at does not block the open.
const pruneLockFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

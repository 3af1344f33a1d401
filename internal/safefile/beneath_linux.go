package safefile

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoOpenat2 = errors.New("openat2 is not available")

// forceWalk makes OpenBeneath use the component walk (tests of the fallback).
var forceWalk = false

// openat2Beneath opens rel under dfd with RESOLVE_BENEATH: the kernel refuses (EXDEV) any
// resolution that would leave the folder, through "..", an absolute link or a relative one.
func openat2Beneath(dfd int, rel string) (int, error) {
	if forceWalk {
		return -1, errNoOpenat2
	}
	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := retry(func() (int, error) { return unix.Openat2(dfd, rel, how) })
	if err == unix.ENOSYS || err == unix.EPERM { // an old kernel, or a seccomp filter that forbids it
		return -1, errNoOpenat2
	}
	return fd, err
}

//go:build linux

package enginekind

import (
	"net"

	"golang.org/x/sys/unix"
)

// PeerPID is the process at the other end of a unix socket connection (SO_PEERCRED: the
// process that listens on it), or 0 where it cannot be told (TCP, a socket a service manager
// opened for the engine: then its pid is the manager's).
func PeerPID(conn net.Conn) int {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

//go:build linux

package image

import (
	"context"
	"net"

	"golang.org/x/sys/unix"
)

// peerPID is the process at the other end of the engine's unix socket (SO_PEERCRED: the
// process that listens on it), or 0 where it cannot be told (TCP, a socket a service
// manager opened for the engine: then its pid is the manager's).
func peerPID(ctx context.Context, dial func(context.Context) (net.Conn, error)) int {
	conn, err := dial(ctx)
	if err != nil {
		return 0
	}
	defer conn.Close()
	return connPeerPID(conn)
}

// connPeerPID is peerPID of a connection already open (0: not a unix socket, or not told).
func connPeerPID(conn net.Conn) int {
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

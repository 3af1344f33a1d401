//go:build linux

package image

import (
	"context"
	"net"

	"github.com/benchctl/benchctl/internal/enginekind"
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
	return enginekind.PeerPID(conn)
}

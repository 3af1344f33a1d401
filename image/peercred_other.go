//go:build !linux

package image

import (
	"context"
	"net"
)

// peerPID: told on Linux only.
func peerPID(context.Context, func(context.Context) (net.Conn, error)) int { return 0 }

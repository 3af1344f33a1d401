package commands

import (
	"context"
	"os"
	"time"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
)

// newBuildKitBuilder connects to buildkitd: --buildkit-addr, else $BUILDKIT_HOST.
func newBuildKitBuilder(addr string) (image.Builder, func(), error) {
	if addr == "" {
		addr = os.Getenv("BUILDKIT_HOST")
	}
	if addr == "" {
		return nil, nil, exitcode.Usagef("start buildkitd and pass its address, e.g. --buildkit-addr unix:///run/buildkit/buildkitd.sock", "--builder buildkit needs --buildkit-addr or BUILDKIT_HOST")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	b, err := image.NewBuildKitBuilder(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { b.Close() }, nil
}

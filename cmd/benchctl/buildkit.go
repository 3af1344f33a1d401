package main

import (
	"github.com/benchctl/benchctl/image"
)

func newBuildKitBuilder(addr string) (image.Builder, func(), error) {
	return nil, nil, usagef("use --builder docker", "the buildkit builder is not available in this build yet")
}

package main

import (
	"context"
	"time"

	"github.com/moby/moby/client"
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// engineFlag adds --engine: the container engine to use, docker or podman.
func engineFlag(cmd *cobra.Command, p *string) {
	choiceFlag(cmd, cmd.Flags(), p, "engine", "", "",
		"container `engine`: docker or podman (default: the manifest's engine:, else the one DOCKER_HOST names; podman without DOCKER_HOST finds Podman's socket)",
		image.KindDocker, image.KindPodman)
}

// engineKind is the engine asked for: --engine, else the manifest's engine: ("": any).
func engineKind(flag string, m *manifest.Manifest) string {
	if flag != "" || m == nil {
		return flag
	}
	return m.Engine
}

// connectEngine connects to the engine kind asks for and, when a kind is asked for, checks
// that the engine answering is of that kind (DOCKER_HOST may name another).
func connectEngine(ctx context.Context, kind string) (*client.Client, error) {
	c, err := image.ConnectKind(kind)
	if err != nil || kind == image.KindAny {
		return c, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id, err := image.Identify(ctx, c)
	if err == nil {
		err = image.CheckKind(kind, id)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

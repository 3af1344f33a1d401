package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/image"
)

// engineFlag adds --engine: the container engine to use, docker or podman.
func engineFlag(cmd *cobra.Command, p *string) {
	choiceFlag(cmd, cmd.Flags(), p, "engine", "", "",
		"container `engine`: docker or podman (default: the manifest's engine:, else the one DOCKER_HOST names; podman without DOCKER_HOST finds Podman's socket)",
		image.KindDocker, image.KindPodman)
}

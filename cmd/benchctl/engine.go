package main

import (
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

// runtimeFlag adds --runtime: where the benchmarks run, engine or process.
func runtimeFlag(cmd *cobra.Command, p *string) {
	choiceFlag(cmd, cmd.Flags(), p, "runtime", "", "",
		"where the benchmarks run: `engine` (each in a container of the Docker or Podman engine) or process (each a child process of benchctl, on the node as it is: bare metal, or inside a pyxis, enroot, Apptainer or Kubernetes container); default: the manifest's runtime:, else engine",
		manifest.Runtimes...)
}

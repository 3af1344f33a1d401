// Package enginekind is the one rule that tells Podman's Engine API service from Docker's
// by its version answer, for image (which engine builds and loads) and workload/engine
// (which engine runs a benchmark): Podman names a component "Podman Engine" (its platform
// name is the OS, linux/amd64/debian-12); Docker names its component "Engine" and its
// platform "Docker Engine - Community", or nothing (Debian's docker.io).
package enginekind

import "strings"

// The kinds.
const (
	Docker = "docker"
	Podman = "podman"
)

// Of is the kind and name of the engine whose version answer has platform as its platform
// name and components as its components' names.
func Of(platform string, components ...string) (kind, name string) {
	for _, c := range components {
		if strings.HasPrefix(strings.ToLower(c), "podman") {
			return Podman, "Podman Engine"
		}
	}
	if strings.HasPrefix(strings.ToLower(platform), "podman") {
		return Podman, "Podman Engine"
	}
	if strings.HasPrefix(strings.ToLower(platform), "docker") {
		return Docker, platform
	}
	return Docker, "Docker Engine"
}

// Package podman is what a benchmark's container needs where the engine is Podman, rootless
// or not: the resource limits the engine can give a container (its process's hard limits,
// or the user's), the ulimits asked for adapted or refused to fit them, and, on rootless
// Podman, the keep-id user namespace that makes what the container writes the user's own
// (with the image's users put in numbers). Doctor reads the same facts.
package podman
